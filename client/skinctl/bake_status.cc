// skinctl bake-status BAKE and skinctl cancel BAKE: a bake's state, and cancelling a queued or
// running bake.
#include <string>

#include "absl/strings/str_cat.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CommandBakeStatus(const Args& args) {
  const std::string command = args[1];
  if (args.size() < 3) return absl::InvalidArgumentError(absl::StrCat(command, " needs a bake name (rigs/{rig}/bakes/{bake})"));
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  ASSIGN_OR_RETURN(v1::Bake bake, command == "cancel" ? client->CancelBake(args[2]) : client->GetBake(args[2]));
  PrintBake(bake);
  return absl::OkStatus();
}

}  // namespace skinning
