// The client's public header must not pull in Eigen or the core library.
#include "client/client.h"

#ifdef EIGEN_WORLD_VERSION
#error "client/client.h includes Eigen"
#endif
#ifdef SKINNING_CORE_GEOMETRY_MESH_H_
#error "client/client.h includes the core library"
#endif

#include <gtest/gtest.h>

TEST(ClientHeader, IncludesNeitherEigenNorCore) { SUCCEED() << "checked at compile time"; }
