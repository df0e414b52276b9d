// What a bake did: its domain, where the time went and the method's own summary.
#ifndef SKINNING_CORE_WEIGHTS_BAKE_REPORT_H_
#define SKINNING_CORE_WEIGHTS_BAKE_REPORT_H_

#include <string>

namespace skinning {

struct BakeReport {
  std::string method;  // BakeMethodName, or the variant ("endpoint_joint_bbw", ...)
  std::string domain;  // "surface", DomainReport::BriefReport(), "none"
  int domain_nodes = 0;
  double domain_seconds = 0.0;
  double solve_seconds = 0.0;
  double total_seconds = 0.0;
  std::string detail;  // the method's own report in one line

  // One line: "bbw on voxel grid 64 (...): 2.41 s (domain 0.31 s, solve 2.1 s); <detail>".
  std::string BriefReport() const;
};

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BAKE_REPORT_H_
