// Reproducible random bytes for store tests (binary-safe values of any size).
#ifndef SKINNING_TESTS_SUPPORT_RANDOM_BYTES_H_
#define SKINNING_TESTS_SUPPORT_RANDOM_BYTES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

namespace skinning::testing {

// `n` bytes from a 64-bit Mersenne Twister seeded with `seed`.
inline std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(&s[i], &r, std::min<size_t>(8, n - i));
  }
  return s;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_RANDOM_BYTES_H_
