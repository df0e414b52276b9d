// libigl's .dmat dense matrices, ASCII and binary.
#ifndef SKINNING_CORE_IO_DMAT_H_
#define SKINNING_CORE_IO_DMAT_H_

#include <string>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/strings/string_view.h"

namespace skinning {

// ASCII: `cols rows`, then cols*rows numbers column-major. Binary: `0 0`, then `cols rows`, then
// cols*rows little-endian float64 column-major. Returns a rows by cols matrix.
absl::StatusOr<Eigen::MatrixXd> ReadDmat(const std::string& path);
// ReadDmat of a file's bytes; `name` starts every message.
absl::StatusOr<Eigen::MatrixXd> ParseDmat(absl::string_view text, const std::string& name = "dmat");
absl::Status WriteDmat(const std::string& path, const Eigen::MatrixXd& M, bool ascii = true);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_DMAT_H_
