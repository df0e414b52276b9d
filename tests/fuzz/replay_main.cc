// The replay driver of a fuzz target in the normal build: runs LLVMFuzzerTestOneInput on every
// file under the paths given (its seed corpus), so CTest checks that no seed crashes, hangs or
// trips a sanitizer, without libFuzzer. A missing path fails when CI=true (the shared data is
// always there in CI) and is skipped, saying so, otherwise.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::strcmp(ci, "true") == 0;
  long inputs = 0;
  for (int a = 1; a < argc; ++a) {
    const fs::path root = argv[a];
    if (!fs::exists(root)) {
      std::fprintf(stderr, "%s: %s is missing\n", in_ci ? "error" : "skipping (CI is unset)", argv[a]);
      if (in_ci) return 1;
      continue;
    }
    std::vector<fs::path> files;
    if (fs::is_directory(root)) {
      for (const auto& e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(root);
    }
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  std::printf("replayed %ld inputs\n", inputs);
  return inputs > 0 ? 0 : 1;
}
