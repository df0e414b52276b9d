// Bake time and peak memory per method and character, at the default resolution or at each of
// --resolutions (how time grows with the grid).
//
//   ./build/bench/bake_bench [--data=DIR] [--methods=bone_heat,geodesic_voxel,bbw]
//                            [--resolutions=48,64,96,128] [--characters=CesiumMan,hand]
//                            [--bbw_coarsest=N]
//
// --bbw_coarsest sets BbwOptions::coarsest_resolution (0: BBW's first active sets from ADMM
// alone, as before the coarse-grid start; the default is the option's).
//
// Each bake runs in a child process (fork) so that its peak resident memory (ru_maxrss from
// wait4) is its own. Prints one table.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/util/blas_kernels.h"
#include "core/weights/bake.h"

namespace skinning {
namespace {

struct Character {
  std::string name;
  Mesh mesh;
  Skeleton skeleton;
  std::optional<TetDomainInput> tets;  // bake on this tet mesh instead of a voxel grid
};

Character MakeCharacter(std::string name, Mesh mesh, Skeleton skeleton) {
  Character c;
  c.name = std::move(name);
  c.mesh = std::move(mesh);
  c.skeleton = std::move(skeleton);
  return c;
}

// Each triangle split into four at its edge midpoints (shared midpoints deduplicated).
Mesh MidpointSubdivide(const Mesh& m) {
  std::map<std::pair<int, int>, int> mid;
  std::vector<Eigen::RowVector3d> V;
  for (int i = 0; i < m.V.rows(); ++i) V.push_back(m.V.row(i));
  auto midpoint = [&](int a, int b) {
    auto key = std::minmax(a, b);
    auto it = mid.find(key);
    if (it != mid.end()) return it->second;
    V.push_back(0.5 * (m.V.row(a) + m.V.row(b)));
    return mid[key] = static_cast<int>(V.size()) - 1;
  };
  std::vector<Eigen::RowVector3i> F;
  for (int f = 0; f < m.F.rows(); ++f) {
    const int a = m.F(f, 0), b = m.F(f, 1), c = m.F(f, 2);
    const int ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
    F.push_back({a, ab, ca});
    F.push_back({ab, b, bc});
    F.push_back({ca, bc, c});
    F.push_back({ab, bc, ca});
  }
  Mesh out;
  out.V.resize(V.size(), 3);
  for (size_t i = 0; i < V.size(); ++i) out.V.row(i) = V[i];
  out.F.resize(F.size(), 3);
  for (size_t f = 0; f < F.size(); ++f) out.F.row(f) = F[f];
  return out;
}

std::vector<Character> LoadCharacters(const std::string& data) {
  std::vector<Character> out;
  if (auto mesh = ReadObj(data + "/libigl/arm/arm.obj"); mesh.ok()) {
    auto graph = ReadTgf(data + "/libigl/arm/arm.tgf");
    if (graph.ok())
      if (auto s = SkeletonFromBones(*graph); s.ok()) out.push_back(MakeCharacter("arm", *mesh, *s));
  }
  if (auto tets = ReadMedit(data + "/libigl/hand/hand.mesh"); tets.ok()) {
    auto graph = ReadTgf(data + "/libigl/hand/hand.tgf");
    Mesh surface;
    surface.V = tets->V.topRows(tets->F.maxCoeff() + 1);
    surface.F = tets->F;
    if (graph.ok())
      if (auto s = SkeletonFromBones(*graph); s.ok()) {
        out.push_back(MakeCharacter("hand (surface)", surface, *s));
        // libigl's own setting: BBW on the hand's tet mesh.
        Character on_tets = MakeCharacter("hand (tet mesh)", surface, *s);
        on_tets.tets.emplace();
        on_tets.tets->TV = tets->V;
        on_tets.tets->TT = tets->T.cast<int>();
        out.push_back(std::move(on_tets));
      }
  }
  for (const char* name : {"RiggedFigure/RiggedFigure.glb", "CesiumMan/CesiumMan.glb"}) {
    auto c = ReadGltf(data + "/gltf/" + name);
    if (!c.ok()) continue;
    std::string label = name;
    label = label.substr(0, label.find('/'));
    out.push_back(MakeCharacter(label, c->mesh, c->skeleton));
    if (label == "CesiumMan") {
      Mesh fine = MidpointSubdivide(c->mesh);
      out.push_back(MakeCharacter("CesiumMan subdivided", fine, c->skeleton));
    }
  }
  return out;
}

struct Row {
  bool ok = false;
  double seconds = 0;
  double domain_seconds = 0;
  int nodes = 0;
  char error[160] = {0};
  char brief[400] = {0};  // BakeReport::BriefReport()
};

int Run(const std::string& data, const std::vector<std::string>& methods, const std::vector<int>& resolutions,
        const std::vector<std::string>& only, int bbw_coarsest) {
  std::vector<Character> characters;
  for (Character& c : LoadCharacters(data)) {
    bool wanted = only.empty();
    for (const std::string& o : only) wanted |= c.name.rfind(o, 0) == 0;  // a name's prefix
    if (wanted) characters.push_back(std::move(c));
  }
  if (characters.empty()) {
    std::fprintf(stderr, "no characters found under %s (or none matches --characters)\n", data.c_str());
    return 1;
  }
  std::printf("Bake time and peak memory, default options (voxel resolution %d unless said, k = 4), %ld cores\n",
              VoxelGridOptions().resolution, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%-22s %8s %6s  %-15s %5s %9s %10s %9s %12s\n", "character", "vertices", "joints", "method", "res",
              "nodes", "domain s", "total s", "peak RSS MB");
  for (const Character& c : characters) {
    for (const std::string& m : methods) {
    for (const int resolution : resolutions) {
      BakeOptions options;
      options.method = m == "bone_heat" ? BakeMethod::kBoneHeat : m == "bbw" ? BakeMethod::kBbw : BakeMethod::kGeodesicVoxel;
      options.domain.voxel.resolution = resolution;
      options.bbw.coarsest_resolution = bbw_coarsest;
      if (m != "bone_heat") options.domain.tet_mesh = c.tets;  // a surface method refuses a tet mesh
      const bool surface = m == "bone_heat" || c.tets.has_value();  // the grid does not matter
      int fds[2];
      if (pipe(fds) != 0) return 1;
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        Row row;
        auto result = Bake(c.mesh, c.skeleton, options);
        if (result.ok()) {
          row.ok = true;
          row.seconds = result->report.total_seconds;
          row.domain_seconds = result->report.domain_seconds;
          row.nodes = result->report.domain_nodes;
          std::snprintf(row.brief, sizeof row.brief, "%s", result->report.BriefReport().c_str());
        } else {
          std::snprintf(row.error, sizeof row.error, "%s", std::string(result.status().message()).c_str());
        }
        if (write(fds[1], &row, sizeof row) != sizeof row) _exit(2);
        _exit(0);
      }
      close(fds[1]);
      Row row;
      const bool got = read(fds[0], &row, sizeof row) == sizeof row;
      close(fds[0]);
      int status = 0;
      rusage usage{};
      wait4(pid, &status, 0, &usage);
      const double rss_mb = usage.ru_maxrss / 1024.0;
      if (!got || !row.ok) {
        std::printf("%-22s %8ld %6d  %-15s %5s failed: %s\n", c.name.c_str(), static_cast<long>(c.mesh.V.rows()),
                    c.skeleton.size(), m.c_str(), surface ? "-" : std::to_string(resolution).c_str(),
                    got ? row.error : "child died");
        continue;
      }
      std::printf("%-22s %8ld %6d  %-15s %5s %9d %10.3f %9.3f %12.1f\n", c.name.c_str(),
                  static_cast<long>(c.mesh.V.rows()), c.skeleton.size(), m.c_str(),
                  surface ? "-" : std::to_string(resolution).c_str(), row.nodes, row.domain_seconds, row.seconds,
                  rss_mb);
      std::printf("  %s\n", row.brief);
      std::fflush(stdout);
      if (surface) break;
    }
    }
  }
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  std::string data = SKINNING_DATA_DIR;
  if (const char* env = std::getenv("SKINNING_DATA_DIR"); env && *env) data = env;
  std::vector<std::string> methods = {"bone_heat", "geodesic_voxel", "bbw"}, characters;
  std::vector<int> resolutions = {skinning::VoxelGridOptions().resolution};
  int bbw_coarsest = skinning::BbwOptions().coarsest_resolution;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--data=", 7) == 0) {
      data = argv[i] + 7;
    } else if (std::strncmp(argv[i], "--methods=", 10) == 0) {
      methods = absl::StrSplit(argv[i] + 10, ',');
    } else if (std::strncmp(argv[i], "--characters=", 13) == 0) {
      characters = absl::StrSplit(argv[i] + 13, ',');
    } else if (std::strncmp(argv[i], "--resolutions=", 14) == 0) {
      resolutions.clear();
      for (absl::string_view r : absl::StrSplit(argv[i] + 14, ',')) resolutions.push_back(std::atoi(std::string(r).c_str()));
    } else if (std::strncmp(argv[i], "--bbw_coarsest=", 15) == 0) {
      bbw_coarsest = std::atoi(argv[i] + 15);
    } else {
      std::fprintf(stderr,
                   "usage: bake_bench [--data=DIR] [--methods=bone_heat,geodesic_voxel,bbw] [--resolutions=48,64,...] "
                   "[--characters=NAME,...] [--bbw_coarsest=N]\n");
      return 2;
    }
  }
  return skinning::Run(data, methods, resolutions, characters, bbw_coarsest);
}
