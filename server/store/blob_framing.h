// How every store writes a value: a 20-byte header, then the payload. Integers little-endian:
//   bytes 0-3    magic "SKB1"
//   bytes 4-7    format version (kBlobFormatVersion)
//   bytes 8-15   payload length in bytes
//   bytes 16-19  CRC-32 (IEEE 802.3, as zlib's crc32) of the payload
// so a reader tells a whole, unchanged value from a cut-off or damaged one (DATA_LOSS naming it).
#ifndef SKINNING_SERVER_STORE_BLOB_FRAMING_H_
#define SKINNING_SERVER_STORE_BLOB_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning {

inline constexpr char kBlobMagic[4] = {'S', 'K', 'B', '1'};
inline constexpr uint32_t kBlobFormatVersion = 1;
inline constexpr size_t kBlobHeaderBytes = 20;

// The header of `payload`.
std::string BlobHeader(absl::string_view payload);

// The header followed by `payload`.
std::string FrameBlob(absl::string_view payload);

// Whether `value` starts with the magic (a framed value, whole or not).
bool StartsFramed(absl::string_view value);

// Whether `value` is a framed value, maybe damaged: it starts with the magic, or its header's
// version and length fields hold kBlobFormatVersion and the bytes that follow (a damaged magic;
// an unframed value of a store written before the framing matches that by chance with odds of
// about 2^-96). Anything else is such an unframed value.
bool LooksFramed(absl::string_view value);

// The payload of a framed `value` (a view into it), or DATA_LOSS "<what> is corrupt: ..." when
// the header is short, the magic or version differ, the length is not what follows, or the
// CRC-32 does not match.
absl::StatusOr<absl::string_view> BlobPayload(absl::string_view value, const std::string& what);

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_BLOB_FRAMING_H_
