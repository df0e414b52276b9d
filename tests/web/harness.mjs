// What the browser tests' scripts share: their --name=value arguments, the result.json they
// write step by step into --out, Debian's chromium, headless, through playwright-core, and the
// viewer's page opened in it.
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

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The restart scripts meet their C++ test through files in --out: one side writes one (signal),
// the other waits for it to exist (waitFile).
export const signal = (name) => writeFileSync(`${args.out}/${name}`, "");
export const waitFile = async (name, timeoutMs) => {
  for (const t0 = Date.now(); !existsSync(`${args.out}/${name}`);) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`no ${name} after ${timeoutMs} ms`);
    await sleep(50);
  }
};

// Opens the viewer at --url in a new page (`viewport`; `device`: more of the page's context
// options, e.g. isMobile and hasTouch), waits until it is ready and runs `body(page)`. Console errors (but those `expected(text)` allows) and page errors go to
// result.consoleErrors, a throw to result.failure; result.json is written and the browser closed
// whatever happens.
export async function withViewer({ viewport, device = {}, expected = () => false }, body) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport, ...device });
    page.on("console", (m) => {
      if (m.type() === "error" && !expected(m.text())) result.consoleErrors.push(`${m.text()} (${m.location().url})`);
    });
    page.on("pageerror", (e) => result.consoleErrors.push(String(e.stack ?? e)));
    await page.goto(args.url, { waitUntil: "load" });
    await page.waitForFunction(() => window.__viewer?.ready, null, { timeout: 60000, polling: 50 });
    await body(page);
  } catch (e) {
    result.failure = String(e?.stack ?? e);
  } finally {
    result.pageErrors ??= [];
    save();
    await browser.close();
  }
}

// Chooses `files` in the page's file chooser and waits until it has registered them; answers the
// rig's name. The last rig is cleared first, so that a file of the rig already open is waited for.
export async function registerFiles(page, files) {
  await page.evaluate(() => { window.__viewer.registered = null; });
  await page.setInputFiles("#file", files);
  await page.waitForFunction(() => window.__viewer.registered, null, { timeout: 60000, polling: 50 });
  return page.evaluate(() => window.__viewer.registered);
}

// Registers --glb through the page's file chooser (the restart scripts' first step).
export async function registerSample(page) {
  await registerFiles(page, args.glb);
  step("registered");
}

// Moves the page's first joint slider (rx) to `deg` degrees, as a user drags it.
export const setSlider = (page, deg) =>
  page.$eval("#rx", (e, v) => { e.value = String(v); e.dispatchEvent(new Event("input")); }, deg);
