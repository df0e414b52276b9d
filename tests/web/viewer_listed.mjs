// The viewer opening rigs from its list, registered elsewhere (a client, another page): each comes
// with the animations stored with it (GetAnimations), which play; then deleting the last one, once
// dismissed and once confirmed. --rigs: the rigs to open, in order. Writes OUT/result.json for
// tests/e2e/viewer_test.cc.
//
//   node tests/web/viewer_listed.mjs --url=http://127.0.0.1:PORT --glb=UNUSED --out=DIR --rigs=rigs/A,rigs/B
import { args, result, step, withViewer } from "./harness.mjs";

await withViewer({ viewport: { width: 800, height: 500 } }, async (page) => {
  result.opened = [];
  for (const rig of args.rigs.split(",")) {
    await page.selectOption("#rigs", rig);
    await page.waitForFunction((n) => window.__viewer.opened === n || window.__viewer.errors.length, rig,
                               { timeout: 30000, polling: 50 });
    const seen = {
      rig: await page.evaluate(() => window.__viewer.opened),
      animations: await page.$$eval("#animation option", (os) => os.map((o) => o.textContent)),
      playDisabled: await page.$eval("#play", (e) => e.disabled),
    };
    if (!seen.playDisabled) {
      await page.click("#play");
      await page.waitForFunction(() => (window.__viewer.played && window.__viewer.frame > 3) ||
                                       window.__viewer.errors.length, null, { timeout: 30000, polling: 50 });
      await page.click("#play");
      seen.frame = await page.evaluate(() => window.__viewer.frame);
    }
    result.opened.push(seen);
    step(`opened ${rig}`);
  }

  // "Delete this rig" on the last one opened: dismissed, nothing happens; accepted, it goes.
  const listed = () => page.$$eval("#rigs option", (os) => os.map((o) => o.value));
  let accept = false;
  page.on("dialog", (d) => {
    result.dialog = d.message();
    return accept ? d.accept() : d.dismiss();
  });
  await page.click("#delete-rig");
  result.afterDismiss = await listed();
  accept = true;
  await page.click("#delete-rig");
  await page.waitForFunction(() => window.__viewer.deleted || window.__viewer.errors.length, null,
                             { timeout: 30000, polling: 50 });
  result.afterDelete = {
    deleted: await page.evaluate(() => window.__viewer.deleted),
    rigs: await listed(),
    animations: await page.$$eval("#animation option", (os) => os.length),
    deleteDisabled: await page.$eval("#delete-rig", (e) => e.disabled),
    status: await page.$eval("#status", (e) => e.textContent),
  };
  step("deleted");
  result.errors = await page.evaluate(() => window.__viewer.errors);
});
