// What the browser tests' scripts share: their --name=value arguments, the result.json they
// write step by step into --out, and Debian's chromium, headless, through playwright-core.
import { existsSync, writeFileSync, mkdirSync } from "node:fs";
import { chromium } from "playwright-core";

export const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, "").split(/=(.*)/s).slice(0, 2)));
mkdirSync(args.out, { recursive: true });
export const result = { consoleErrors: [], steps: [] };
export const save = () => writeFileSync(`${args.out}/result.json`, JSON.stringify(result, null, 1));
export const step = (name) => { result.steps.push(name); save(); };

export const launchChromium = () => chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  // Root in CI needs --no-sandbox; WebGL runs on SwiftShader (no GPU).
  args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"],
});

// The restart scripts meet their C++ test through files in --out: waits for one to exist.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const waitFile = async (name, timeoutMs) => {
  for (const t0 = Date.now(); !existsSync(`${args.out}/${name}`);) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`no ${name} after ${timeoutMs} ms`);
    await sleep(50);
  }
};
