// gzip content coding (RFC 1952) for the HTTP front door: compressed request bodies and, when the
// client accepts them, compressed answers.
#ifndef SKINNING_SERVER_HTTP_GZIP_H_
#define SKINNING_SERVER_HTTP_GZIP_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning {

// The data of one gzip member. INVALID_ARGUMENT when `in` is not one whole gzip member (bad
// header or checksum, cut short, bytes after its end); RESOURCE_EXHAUSTED, without inflating
// further, as soon as the data would pass `max_bytes` (a small body may expand a thousandfold).
absl::StatusOr<std::string> Gunzip(absl::string_view in, size_t max_bytes);

// `in` as one gzip member at zlib's compression `level` (1 fastest .. 9 smallest).
// RESOURCE_EXHAUSTED when zlib cannot get its working memory.
absl::StatusOr<std::string> Gzip(absl::string_view in, int level);

// Whether an Accept-Encoding value ("gzip, deflate, br", "gzip;q=0.5", "*") takes gzip: listed
// (or "*" without a gzip entry) with a q-value above 0. Coding names are case-insensitive.
bool AcceptsGzip(absl::string_view accept_encoding);

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_GZIP_H_
