// What the browser tests' scripts share: their --name=value arguments, the result.json they
// write step by step into --out, and Debian's chromium, headless, through playwright-core.
import { writeFileSync, mkdirSync } from "node:fs";
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
