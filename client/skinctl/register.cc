// skinctl register: stores a character read from local files and prints its rig name.
#include <cstdio>

#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CommandRegister(const Args&) {
  ASSIGN_OR_RETURN(Character c, LoadCharacter());
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  ASSIGN_OR_RETURN(std::string name, RegisterCharacter(*client, c));
  std::printf("%s\n", name.c_str());
  return absl::OkStatus();
}

}  // namespace skinning
