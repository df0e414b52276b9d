#include "core/io/mesh_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/off.h"
#include "tests/support/data.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::TempPath;

TEST(MeshFileTest, DispatchesOnExtension) {
  const std::string obj = DataPath("libigl/arm/arm.obj");
  const std::string off = DataPath("deformation-benchmark/bar/bar.off");
  const std::string mesh = DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(obj);
  SKINNING_REQUIRE_DATA(off);
  SKINNING_REQUIRE_DATA(mesh);
  absl::StatusOr<Mesh> a = ReadMeshFile(obj);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->V.rows(), 8311);
  absl::StatusOr<Mesh> b = ReadMeshFile(off);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->F.rows(), 12106);
  // MEDIT: the stored triangles over all vertices, interior ones included.
  absl::StatusOr<Mesh> c = ReadMeshFile(mesh);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->V.rows(), 7234);
  EXPECT_EQ(c->F.rows(), 9556);
  EXPECT_EQ(c->N.rows(), 0);
}

TEST(MeshFileTest, WritesEachFormatReadableByItsOwnReader) {
  Mesh mesh;
  mesh.V.resize(4, 3);
  mesh.V << 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1.0 / 3.0;
  mesh.F.resize(2, 3);
  mesh.F << 0, 1, 2, 0, 3, 1;
  for (const char* extension : {".obj", ".OFF", ".mesh"}) {
    const std::string path = TempPath(extension);
    ASSERT_TRUE(WriteMeshFile(path, mesh).ok()) << extension;
    absl::StatusOr<Mesh> back = ReadMeshFile(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->V, mesh.V) << extension;
    EXPECT_EQ(back->F, mesh.F) << extension;
    std::remove(path.c_str());
  }
  // The format really follows the extension.
  const std::string off = TempPath(".off");
  ASSERT_TRUE(WriteMeshFile(off, mesh).ok());
  EXPECT_TRUE(ReadOff(off).ok());
  std::remove(off.c_str());
}

TEST(MeshFileTest, RejectsUnknownExtension) {
  const absl::Status s = ReadMeshFile("/tmp/model.ply").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'.ply'"), absl::string_view::npos) << s;
  EXPECT_EQ(ReadMeshFile("/tmp/dir.v2/noextension").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteMeshFile("/tmp/model.stl", Mesh()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
