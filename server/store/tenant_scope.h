// What the per-tenant artifacts of a rig (examples, animations) share: their key's scope checked,
// and the words that name it in messages.
#ifndef SKINNING_SERVER_STORE_TENANT_SCOPE_H_
#define SKINNING_SERVER_STORE_TENANT_SCOPE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/auth/auth.h"
#include "server/names.h"

namespace skinning {

// INVALID_ARGUMENT unless the rig id and the tenant's name (when not "") may be part of a key.
inline absl::Status CheckTenantScope(const std::string& rig_id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckRigId(rig_id));
  if (!tenant.empty()) RETURN_IF_ERROR(CheckTenantName(tenant));
  return absl::OkStatus();
}

// "rig 'rigs/<id>'", with " (tenant T)" for a tenant other than "".
inline std::string DescribeTenantScope(const std::string& rig_id, const std::string& tenant) {
  const std::string rig = absl::StrCat("rig '", RigName(rig_id), "'");
  return tenant.empty() ? rig : absl::StrCat(rig, " (tenant ", tenant, ")");
}

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_TENANT_SCOPE_H_
