// The volume the volumetric methods run on: a regular voxel grid that embeds the mesh, or a
// user-given tetrahedral mesh (VolumeDomain), and the one builder for either (BuildDomain).
#ifndef SKINNING_CORE_GEOMETRY_VOLUME_DOMAIN_H_
#define SKINNING_CORE_GEOMETRY_VOLUME_DOMAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/util/progress.h"

namespace skinning {

using RowMatrixX4i = Eigen::Matrix<int32_t, Eigen::Dynamic, 4, Eigen::RowMajor>;

struct VolumeDomain {
  enum class Kind { kVoxelGrid, kTetMesh };
  Kind kind = Kind::kVoxelGrid;

  RowMatrixX3d nodes;  // #N by 3 node positions (bind space)
  // #N by #N stiffness matrix of linear (tets) or trilinear (voxels) finite elements: symmetric
  // positive semi-definite, rows sum to 0; ½ wᵀ K w is the Dirichlet energy ∫ |∇w|² / 2.
  Eigen::SparseMatrix<double> K;
  Eigen::VectorXd mass;  // #N lumped masses (volume per node), all positive
  // #V by #N interpolation to the mesh vertices (trilinear for voxels, barycentric for tets):
  // each row has non-negative entries summing to 1.
  Eigen::SparseMatrix<double, Eigen::RowMajor> to_mesh;
  // The node graph for geodesic distances (26-neighbourhood for voxels, tet edges for tets), as
  // compressed rows: the neighbours of node i are graph_targets[graph_offsets[i] ..
  // graph_offsets[i+1]) at Euclidean distances graph_lengths[...].
  std::vector<int32_t> graph_offsets;  // #N + 1
  std::vector<int32_t> graph_targets;
  std::vector<double> graph_lengths;

  // Voxel grid only: the grid's origin (corner of cell 0,0,0), cell size, and cells per axis.
  Eigen::Vector3d origin = Eigen::Vector3d::Zero();
  double spacing = 0.0;
  Eigen::Vector3i cells = Eigen::Vector3i::Zero();
  // Voxel grid only: for each cell (x + cells.x·(y + cells.y·z)), whether it is in the domain.
  std::vector<uint8_t> cell_inside;
  // Voxel grid only: for each grid corner (x + (cells.x+1)·(y + (cells.y+1)·z)), its node index,
  // or -1 when no domain cell touches it. Nodes are numbered in this corner order, so node
  // (x, y, z) sits at origin + spacing · (x, y, z).
  std::vector<int32_t> grid_node;
  // Elements: for voxels the domain cells' 8 corner node indices (#cells by 8, corner order
  // x-fastest: (0,0,0),(1,0,0),(0,1,0),(1,1,0),(0,0,1),...); for tets #T by 4. Later methods
  // (elastic energies) assemble over these.
  Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> elements;

  int num_nodes() const { return static_cast<int>(nodes.rows()); }
};

struct VoxelGridOptions {
  // Cells along the longest side of the mesh's bounding box. The default suits characters of
  // 5k–50k vertices; raise it for thin parts (fingers) to get several cells across.
  int resolution = 64;
  static constexpr int kMinResolution = 8;
  static constexpr int kMaxResolution = 256;
  // A cell is inside when the generalized winding number at its centre is ≥ this (robust to
  // self-intersections, small holes and several components). Cells the surface passes through
  // are always in the domain, so every mesh vertex lies in a domain cell.
  //
  // How (additive detail): the cells a triangle overlaps (exact triangle/box separating-axis
  // test), and the cells holding a mesh vertex, are "surface cells". No triangle separates two
  // adjacent other cells, so within a 6-connected component of them w varies continuously and a
  // component bounded by a closed surface is wholly inside or outside. w is evaluated only on
  // the component's "shell" (cells next to a surface cell); the other cells take the label of
  // the nearest evaluated cell, and wherever two neighbouring labels differ the inferred cells
  // are evaluated too, until none borders a different label. So a leaking hole (one component
  // for inside and outside) is handled: cells deep inside still have w ≈ 1, and the boundary
  // between the labels follows the level set of w that spans the hole. The magnitude |w| is
  // compared, so a mesh wound clockwise throughout (inverted normals) works as well. Winding
  // numbers use a bounding-volume hierarchy over the triangles (Barill et al. 2018, first
  // order): exact (Van Oosterom–Strackee) near the query, a dipole term for clusters farther
  // than 2 radii; within 0.15 of the threshold re-evaluated with 6 radii, within 0.03 exactly.
  double winding_threshold = 0.5;

  // INVALID_ARGUMENT naming the field ("options.voxel.resolution = 300 is outside [8, 256]").
  absl::Status Validate() const;
};

struct VoxelGridReport {
  int resolution = 0;
  Eigen::Vector3i cells = Eigen::Vector3i::Zero();
  int inside_cells = 0;  // cells in the domain
  int surface_cells = 0; // of those, cells the surface passes through
  int nodes = 0;
  double spacing = 0.0;
  double seconds = 0.0;
  int components = 0;           // 6-connected components of non-surface cells
  int winding_evaluations = 0;  // cell centres whose winding number was evaluated
  // The mesh encloses no volume (no cell centre is inside: a flat or open sheet), so the domain
  // is its surface cells alone, a sheet one or two cells thick.
  bool surface_only = false;

  // "voxel grid 64 (66x14x14 cells, 5210 in the domain, 6342 nodes, spacing 0.0313)", with
  // "; surface cells only: the mesh encloses no volume" before the ")" when surface_only.
  std::string BriefReport() const;
};

// Embeds a closed (or nearly closed) triangle mesh in a regular grid: the cells inside it and the
// cells its surface passes through. A mesh that encloses no volume (no cell centre at all,
// surface cells included, has |winding number| ≥ the threshold: a flat cut-out, an open sheet)
// gets the surface cells alone, a sheet one or two cells thick (report->surface_only), as
// geodesic voxel binding (Dionne & de Lasa 2013) voxelizes open meshes. INVALID_ARGUMENT when
// the resolution is outside [kMinResolution, kMaxResolution] or every vertex coincides,
// CANCELLED when cancelled.
// Details: the grid is the mesh's bounding box padded by at least one cell on every side, with
// spacing = longest side / resolution. Nodes are the corners of domain cells; K is the
// assembled trilinear (Q1) stiffness, mass lumps h³/8 per cell corner, and the graph joins two
// nodes when a domain cell holds both (lengths h, h√2, h√3). to_mesh interpolates trilinearly
// in the domain cell that contains each vertex.
absl::StatusOr<VolumeDomain> BuildVoxelDomain(const Mesh& mesh, const VoxelGridOptions& options,
                                              VoxelGridReport* report = nullptr,
                                              const Progress& progress = {});

// A tetrahedral domain from a tet mesh (TV #TV by 3, TT #T by 4, positively or negatively
// oriented). Mesh vertices V (#V by 3) are located in the tets: a vertex that coincides with a
// tet vertex (within 1e-9 of the bounding-box diagonal) maps to it, any other gets barycentric
// weights of its containing tet; INVALID_ARGUMENT names a vertex outside every tet.
// Details: nodes = TV (same indices). Tets of (near) zero volume (|det| ≤ 1e-12 · longest edge³)
// are skipped; elements holds the kept tets only. INVALID_ARGUMENT for an index out of range, a
// non-finite coordinate, no tets, or a tet vertex on no kept tet (it would have zero mass). A
// vertex counts as inside a tet when its barycentric coordinates are all ≥ -1e-8 (they are then
// clamped to ≥ 0 and renormalized).
absl::StatusOr<VolumeDomain> BuildTetDomain(const RowMatrixX3d& TV, const RowMatrixX4i& TT,
                                            const RowMatrixX3d& V, const Progress& progress = {});

// A user-given tetrahedral domain (e.g. MEDIT .mesh): TV #TV by 3, TT #T by 4.
struct TetDomainInput {
  RowMatrixX3d TV;
  RowMatrixX4i TT;
};

// Which volume a volumetric method runs on: a voxel grid that embeds the mesh (the default), or
// the given tet mesh.
struct DomainOptions {
  VoxelGridOptions voxel;                  // used when tet_mesh is not set
  std::optional<TetDomainInput> tet_mesh;  // a tetrahedral domain instead of the voxel grid

  // The voxel options when no tet mesh is given (BuildTetDomain checks a given tet mesh).
  absl::Status Validate() const;
};

struct DomainReport {
  VolumeDomain::Kind kind = VolumeDomain::Kind::kVoxelGrid;
  VoxelGridReport voxel;  // voxel grids only
  int nodes = 0;
  int tets = 0;  // tet meshes only: the tets given (degenerate ones included)
  double seconds = 0.0;

  // VoxelGridReport::BriefReport, or "tet mesh (7234 nodes, 30411 tets)".
  std::string BriefReport() const;
};

// The domain of `mesh` that `options` describe: BuildTetDomain(tet_mesh->TV, tet_mesh->TT,
// mesh.V) when a tet mesh is given, else BuildVoxelDomain(mesh, voxel). Validates the options
// first; errors and progress stages as those functions'. `report` may be null.
absl::StatusOr<VolumeDomain> BuildDomain(const Mesh& mesh, const DomainOptions& options,
                                         DomainReport* report = nullptr,
                                         const Progress& progress = {});

// How near a node must be to a point to count as at it: half a cell diagonal (√3/2 · spacing)
// for voxels — the corners of the cell holding the point — and 1e-6 of the nodes'
// bounding-box diagonal for tets. INVALID_ARGUMENT for a voxel domain without a spacing.
absl::StatusOr<double> PointReach(const VolumeDomain& domain);

// The nodes within `radius` of `point`, with a hair of slack (radius · (1 + 1e-9)) so that a
// node exactly at the radius is not lost to rounding; in increasing order.
std::vector<int> NodesNear(const VolumeDomain& domain, const Eigen::Vector3d& point, double radius);

// Values given on a voxel domain's nodes (#N by k), at `points` (#P by 3): trilinear in the grid
// cell holding each point over that cell's corners that are domain nodes (their weights
// renormalized), NaN in a row whose cell has no domain node (a point off the domain). Points
// outside the grid use the nearest cell. For carrying a coarse grid's solution to a finer grid
// of the same mesh (BBW's coarse-to-fine start). INVALID_ARGUMENT for a tet domain or values
// with a row count other than #N.
absl::StatusOr<Eigen::MatrixXd> InterpolateOnGrid(const VolumeDomain& grid, const Eigen::MatrixXd& values,
                                                  const RowMatrixX3d& points);

}  // namespace skinning

#endif  // SKINNING_CORE_GEOMETRY_VOLUME_DOMAIN_H_
