// A file of the filesystem store read from outside the server: its payload after the 20-byte
// header (magic "SKB1", version, length, CRC-32; server/store/blob_framing.h), for tests that
// look at or damage what the server stored.
#ifndef SKINNING_TESTS_SUPPORT_STORED_FILE_H_
#define SKINNING_TESTS_SUPPORT_STORED_FILE_H_

#include <fstream>
#include <iterator>
#include <string>

namespace skinning::testing {

// The payload of the stored file `path`; a file without the header (written before the
// framing) as it is; empty when it cannot be read.
inline std::string StoredPayload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string raw(std::istreambuf_iterator<char>(in), {});
  constexpr size_t kHeader = 20;
  return raw.size() >= kHeader && raw.compare(0, 4, "SKB1") == 0 ? raw.substr(kHeader) : raw;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_STORED_FILE_H_
