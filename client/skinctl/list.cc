// skinctl list: one line per stored rig of the caller, its name first.
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CommandList(const Args&) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  ASSIGN_OR_RETURN(std::vector<v1::Rig> rigs, client->ListRigs());
  for (const v1::Rig& rig : rigs) PrintRig(rig);
  return absl::OkStatus();
}

}  // namespace skinning
