#include "server/http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace skinning {
namespace {

// zlib's window bits for the gzip wrapper (15-bit window + 16).
constexpr int kGzipWindowBits = 15 + 16;
// What one inflate/deflate call is given at most (zlib counts in uInt).
constexpr size_t kChunk = size_t{1} << 20;

}  // namespace

absl::StatusOr<std::string> Gunzip(absl::string_view in, size_t max_bytes) {
  max_bytes = std::min(max_bytes, std::numeric_limits<size_t>::max() - 1);
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) return absl::InternalError("zlib: inflateInit2 failed");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t in_left = in.size();
  int rc = Z_OK;
  absl::Status status;
  while (status.ok()) {
    if (z.avail_in == 0 && in_left > 0) {
      z.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
      in_left -= z.avail_in;
    }
    // One byte past the limit tells "too large" from "exactly at the limit".
    const size_t room = max_bytes + 1 - out.size();
    const size_t grow = std::min({room, kChunk, std::max<size_t>(out.size(), 4096)});
    const size_t old = out.size();
    out.resize(old + grow);
    z.next_out = reinterpret_cast<Bytef*>(&out[old]);
    z.avail_out = static_cast<uInt>(grow);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(old + (grow - z.avail_out));
    if (out.size() > max_bytes) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("the gzip request body inflates to more than ", max_bytes, " bytes (the message limit)"));
    } else if (rc == Z_STREAM_END) {
      if (z.avail_in > 0 || in_left > 0)
        status = absl::InvalidArgumentError("the gzip request body has bytes after its end (one gzip member expected)");
      break;
    } else if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) {
      status = absl::InvalidArgumentError("the gzip request body is cut short");
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = absl::InvalidArgumentError(
          absl::StrCat("the request body is not valid gzip: ", z.msg != nullptr ? z.msg : "corrupt data"));
    }
  }
  inflateEnd(&z);
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<std::string> Gzip(absl::string_view in, int level) {
  // The window: the input's size rounded up to a power of two, 2^9 to 2^15 bytes. A window as
  // long as the input loses no match, and a short one keeps deflate's set-up (it clears and
  // allocates in proportion to the window) from costing more than a small answer's data: a 3 kB
  // JSON answer took 123 µs with the full window, 51–64 µs so (bench/json_bench).
  int window_bits = 9;
  while (window_bits < 15 && (size_t{1} << window_bits) < in.size()) ++window_bits;
  z_stream z{};
  if (deflateInit2(&z, std::clamp(level, 1, 9), Z_DEFLATED, window_bits + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return absl::ResourceExhaustedError("zlib: no memory to compress the answer");
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(in.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  size_t in_left = in.size();
  size_t out_left = out.size();
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && in_left > 0) {
      z.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0) {
      z.avail_out = static_cast<uInt>(std::min(out_left, kChunk));
      out_left -= z.avail_out;
    }
    rc = deflate(&z, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
      deflateEnd(&z);
      return absl::InternalError(absl::StrCat("zlib: deflate failed (", rc, ")"));
    }
  }
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool AcceptsGzip(absl::string_view accept_encoding) {
  // The q-value of "gzip" (or x-gzip) if listed, else of "*" if listed; 0 when neither is.
  double gzip = -1.0, star = -1.0;
  for (absl::string_view item : absl::StrSplit(accept_encoding, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    const std::string coding = absl::AsciiStrToLower(absl::StripAsciiWhitespace(parts[0]));
    double q = 1.0;
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view p = absl::StripAsciiWhitespace(parts[i]);
      if (p.size() > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
        if (!absl::SimpleAtod(p.substr(2), &q)) q = 0.0;
      }
    }
    if (coding == "gzip" || coding == "x-gzip") gzip = std::max(gzip, q);
    else if (coding == "*") star = std::max(star, q);
  }
  return gzip >= 0.0 ? gzip > 0.0 : star > 0.0;
}

}  // namespace skinning
