// The gzip program, for tests that check gzip bodies with an implementation independent of the
// server's (server/http/gzip.h).
#ifndef SKINNING_TESTS_SUPPORT_GZIP_PROGRAM_H_
#define SKINNING_TESTS_SUPPORT_GZIP_PROGRAM_H_

#include <gtest/gtest.h>

#include <string>

#include "tests/support/data.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_files.h"

namespace skinning::testing {

// `data` through `gzip ARGS` ("-c -9" compresses at level 9, "-dc" decompresses), by way of
// files in the test's temp directory; a failing run fails the test.
inline std::string GzipProgram(const std::string& data, const std::string& args) {
  static int calls = 0;
  const std::string tag = "-gzip" + std::to_string(++calls);
  const std::string in = TempPath(tag + ".in"), out = TempPath(tag + ".out");
  WriteText(in, data);
  const CommandResult r = RunCommand({"/bin/sh", "-c", "gzip " + args + " < '" + in + "' > '" + out + "'"});
  EXPECT_EQ(r.exit_code, 0) << "gzip " << args << ": " << r.output;
  return FileBytes(out);
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_GZIP_PROGRAM_H_
