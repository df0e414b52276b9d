#include "core/weights/bake_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace skinning {

std::string BakeReport::BriefReport() const {
  std::string out = absl::StrFormat("%s on %s: %.3g s (domain %.3g s, solve %.3g s)", method,
                                    domain, total_seconds, domain_seconds, solve_seconds);
  if (!detail.empty()) absl::StrAppend(&out, "; ", detail);
  return out;
}

}  // namespace skinning
