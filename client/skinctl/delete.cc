// skinctl delete RIG: deletes a stored rig.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CommandDelete(const Args& args) {
  if (args.size() < 3) return absl::InvalidArgumentError("delete needs a rig name (rigs/{rig})");
  const std::string name = RigNameArg(args[2]);
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  RETURN_IF_ERROR(client->DeleteRig(name));
  std::printf("deleted %s\n", name.c_str());
  return absl::OkStatus();
}

}  // namespace skinning
