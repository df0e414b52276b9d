// The .sel / .def files of Botsch & Sorkine's deformation benchmark ("On Linear Variational
// Surface Deformation Methods", 2008): per-vertex regions and the handle transform.
#ifndef SKINNING_CORE_IO_DEFORMATION_BENCHMARK_H_
#define SKINNING_CORE_IO_DEFORMATION_BENCHMARK_H_

#include <Eigen/Geometry>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace skinning {

// Per-vertex status, one integer per line after `#` comment lines: 0 = fixed, 1 = deformable
// region, 2 = handle. Returns #V values in file order (values are not range-checked here).
// Errors name the line: "bar.sel:9: 'x' is not an integer".
absl::StatusOr<std::vector<int>> ReadSel(const std::string& path);

// The handle transform: `#` comment lines, then 16 numbers forming a 4x4 matrix in row-major
// order (line breaks do not matter). The last row must be 0 0 0 1 (within 1e-9); the linear
// part is returned as stored (the benchmark's rotations are rounded to 6 digits, so they are
// orthonormal only to about 1e-6).
absl::StatusOr<Eigen::Affine3d> ReadDef(const std::string& path);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_DEFORMATION_BENCHMARK_H_
