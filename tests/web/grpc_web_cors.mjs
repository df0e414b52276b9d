// gRPC-Web from a page of another origin, in Debian's chromium: the page at --url (one server's
// viewer) calls the API server at --api, allowed by that server's --http_cors_origins, the way a
// gRPC-Web client does (fetch with X-Grpc-Web, X-User-Agent and grpc-timeout, so the browser
// sends a preflight first), in binary and in -text. Writes what the page received to
// OUT/result.json; tests/e2e/http_grpc_web_test.cc checks it against gRPC.
//
//   node tests/web/grpc_web_cors.mjs --url=http://127.0.0.1:PAGE --api=http://127.0.0.1:API
//       --pose=BASE64_FRAMED_POSE_REQUEST --out=DIR
import { args, launchChromium, result, save } from "./harness.mjs";

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  page.on("console", (m) => m.type() === "error" && result.consoleErrors.push(m.text()));
  await page.goto(args.url, { waitUntil: "load" });
  result.pageOrigin = await page.evaluate(() => location.origin);
  // In the page: one call per content type; the answer's status, Content-Type and body (base64,
  // the -text body decoded first).
  result.calls = await page.evaluate(async ({ api, pose }) => {
    const bytes = Uint8Array.from(atob(pose), (c) => c.charCodeAt(0));
    const out = {};
    for (const type of ["application/grpc-web+proto", "application/grpc-web-text"]) {
      const text = type.endsWith("-text");
      const res = await fetch(`${api}/skinning.v1.PoseService/Pose`, {
        method: "POST",
        headers: { "Content-Type": type, "X-Grpc-Web": "1", "X-User-Agent": "grpc-web-javascript/0.1",
                   "grpc-timeout": "30S" },
        body: text ? btoa(String.fromCharCode(...bytes)) : bytes,
      });
      let body = new Uint8Array(await res.arrayBuffer());
      if (text) body = Uint8Array.from(atob(new TextDecoder().decode(body)), (c) => c.charCodeAt(0));
      let binary = "";
      for (const b of body) binary += String.fromCharCode(b);
      out[type] = { status: res.status, contentType: res.headers.get("content-type"), body: btoa(binary) };
    }
    return out;
  }, { api: args.api, pose: args.pose });
} catch (e) {
  result.failure = String(e?.stack ?? e);
} finally {
  save();
  await browser.close();
}
