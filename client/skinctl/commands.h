// The skinctl commands, one per file; main.cc dispatches on args[1]. Each takes the positional
// arguments (args[0] is the program, args[1] the command) and reads its flags.
#ifndef SKINNING_CLIENT_SKINCTL_COMMANDS_H_
#define SKINNING_CLIENT_SKINCTL_COMMANDS_H_

#include <vector>

#include "absl/status/status.h"

namespace skinning {

using Args = std::vector<char*>;

absl::Status CommandRegister(const Args& args);    // register.cc
absl::Status CommandList(const Args& args);        // list.cc
absl::Status CommandGet(const Args& args);         // get.cc
absl::Status CommandDelete(const Args& args);      // delete.cc
absl::Status CommandPose(const Args& args);        // pose.cc
absl::Status CommandBake(const Args& args);        // bake.cc
absl::Status CommandBakeStatus(const Args& args);  // bake_status.cc: bake-status and cancel
absl::Status CommandSolve(const Args& args);       // solve.cc
absl::Status CommandExample(const Args& args);     // example.cc: example add|list|remove

}  // namespace skinning

#endif  // SKINNING_CLIENT_SKINCTL_COMMANDS_H_
