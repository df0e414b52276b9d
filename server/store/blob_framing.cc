#include "server/store/blob_framing.h"

#include <zlib.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace skinning {
namespace {

uint32_t Crc32(absl::string_view data) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint64_t ReadLittleEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return value;
}

}  // namespace

std::string BlobHeader(absl::string_view payload) {
  std::string header(kBlobMagic, sizeof kBlobMagic);
  AppendLittleEndian(kBlobFormatVersion, 4, &header);
  AppendLittleEndian(payload.size(), 8, &header);
  AppendLittleEndian(Crc32(payload), 4, &header);
  return header;
}

std::string FrameBlob(absl::string_view payload) {
  std::string value;
  value.reserve(kBlobHeaderBytes + payload.size());
  value.append(BlobHeader(payload));
  value.append(payload.data(), payload.size());
  return value;
}

bool StartsFramed(absl::string_view value) {
  return value.size() >= sizeof kBlobMagic && std::memcmp(value.data(), kBlobMagic, sizeof kBlobMagic) == 0;
}

bool LooksFramed(absl::string_view value) {
  if (StartsFramed(value)) return true;
  return value.size() >= kBlobHeaderBytes && ReadLittleEndian(value.data() + 4, 4) == kBlobFormatVersion &&
         ReadLittleEndian(value.data() + 8, 8) == value.size() - kBlobHeaderBytes;
}

absl::StatusOr<absl::string_view> BlobPayload(absl::string_view value, const std::string& what) {
  if (value.size() < kBlobHeaderBytes)
    return absl::DataLossError(absl::StrFormat("%s is corrupt: %d bytes, shorter than the %d-byte header", what,
                                               value.size(), kBlobHeaderBytes));
  if (!StartsFramed(value))
    return absl::DataLossError(absl::StrCat(what, " is corrupt: it does not start with the magic \"SKB1\""));
  const uint64_t version = ReadLittleEndian(value.data() + 4, 4);
  if (version != kBlobFormatVersion)
    return absl::DataLossError(
        absl::StrFormat("%s has format version %d, this server reads %d", what, version, kBlobFormatVersion));
  const uint64_t length = ReadLittleEndian(value.data() + 8, 8);
  const absl::string_view payload = value.substr(kBlobHeaderBytes);
  if (length != payload.size())
    return absl::DataLossError(absl::StrFormat("%s is corrupt: its header says %d payload bytes but %d follow", what,
                                               length, payload.size()));
  const uint32_t expected = static_cast<uint32_t>(ReadLittleEndian(value.data() + 16, 4));
  const uint32_t crc = Crc32(payload);
  if (crc != expected)
    return absl::DataLossError(
        absl::StrFormat("%s is corrupt: payload CRC-32 %08x, header says %08x", what, crc, expected));
  return payload;
}

}  // namespace skinning
