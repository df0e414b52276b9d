#include "core/weights/geodesic_weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Status ValidateGraph(const VolumeDomain& domain) {
  const int n = domain.num_nodes();
  if (n == 0) return absl::InvalidArgumentError("domain has no nodes");
  if (!domain.nodes.allFinite())
    return absl::InvalidArgumentError("domain.nodes has a non-finite coordinate");
  if (static_cast<int>(domain.graph_offsets.size()) != n + 1)
    return absl::InvalidArgumentError(
        absl::StrFormat("domain.graph_offsets has %d entries, expected %d (#nodes + 1)",
                        domain.graph_offsets.size(), n + 1));
  if (domain.graph_offsets[0] != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("domain.graph_offsets[0] = %d, expected 0", domain.graph_offsets[0]));
  for (int i = 0; i < n; ++i)
    if (domain.graph_offsets[i + 1] < domain.graph_offsets[i])
      return absl::InvalidArgumentError(
          absl::StrFormat("domain.graph_offsets[%d] = %d is less than graph_offsets[%d] = %d",
                          i + 1, domain.graph_offsets[i + 1], i, domain.graph_offsets[i]));
  const size_t edges = static_cast<size_t>(domain.graph_offsets[n]);
  if (domain.graph_targets.size() != edges || domain.graph_lengths.size() != edges)
    return absl::InvalidArgumentError(absl::StrFormat(
        "domain graph has %d targets and %d lengths, expected %d (graph_offsets[#nodes])",
        domain.graph_targets.size(), domain.graph_lengths.size(), edges));
  for (size_t e = 0; e < edges; ++e) {
    if (domain.graph_targets[e] < 0 || domain.graph_targets[e] >= n)
      return absl::InvalidArgumentError(
          absl::StrFormat("domain.graph_targets[%d] = %d is out of range (%d nodes)", e,
                          domain.graph_targets[e], n));
    if (!(domain.graph_lengths[e] >= 0) || !std::isfinite(domain.graph_lengths[e]))
      return absl::InvalidArgumentError(
          absl::StrFormat("domain.graph_lengths[%d] = %g must be finite and non-negative", e,
                          domain.graph_lengths[e]));
  }
  return absl::OkStatus();
}

// The k nearest handles of every node, found by one Dijkstra over (node, handle) labels: each
// node keeps a list of at most k labels (distance, handle) — a settled prefix in the order they
// were settled, then tentative ones sorted by (distance, handle). A label enters a node's list
// only if it improves that handle's tentative distance there and beats the list's worst
// tentative label; a node settles at most k labels. This is exact up to ties: if handle h's
// shortest path to v passes a node u that already holds k labels no worse than h's, those k
// handles are no farther than h from v either, so h is not among v's k nearest.
class KNearestHandles {
 public:
  KNearestHandles(int n, int k)
      : k_(k),
        distance_(static_cast<size_t>(n) * k, kInf),
        handle_(static_cast<size_t>(n) * k, -1),
        settled_(n, 0) {}

  // Offers the tentative label (d, h) to node v; true when it entered the list (the caller then
  // queues it).
  bool Offer(int v, double d, int h) {
    double* dist = &distance_[static_cast<size_t>(v) * k_];
    int* hand = &handle_[static_cast<size_t>(v) * k_];
    const int s = settled_[v];
    for (int i = 0; i < s; ++i)
      if (hand[i] == h) return false;
    for (int i = s; i < k_; ++i) {
      if (hand[i] != h) continue;
      if (d >= dist[i]) return false;
      for (int j = i; j + 1 < k_; ++j) {  // drop the old label of h
        dist[j] = dist[j + 1];
        hand[j] = hand[j + 1];
      }
      dist[k_ - 1] = kInf;
      hand[k_ - 1] = -1;
      break;
    }
    if (s == k_ || !Less(d, h, dist[k_ - 1], hand[k_ - 1])) return false;
    int slot = k_ - 1;
    while (slot > s && Less(d, h, dist[slot - 1], hand[slot - 1])) {
      dist[slot] = dist[slot - 1];
      hand[slot] = hand[slot - 1];
      --slot;
    }
    dist[slot] = d;
    hand[slot] = h;
    return true;
  }

  // Settles the queued label (d, h) of node u if it is still u's best tentative label; false
  // for a stale queue entry.
  bool Settle(int u, double d, int h) {
    const int s = settled_[u];
    if (s == k_) return false;
    const size_t at = static_cast<size_t>(u) * k_ + s;
    if (handle_[at] != h || distance_[at] != d) return false;
    ++settled_[u];
    return true;
  }

  int count(int node) const { return settled_[node]; }
  double distance(int node, int slot) const {
    return distance_[static_cast<size_t>(node) * k_ + slot];
  }
  int handle(int node, int slot) const { return handle_[static_cast<size_t>(node) * k_ + slot]; }

 private:
  static bool Less(double d1, int h1, double d2, int h2) {
    return d1 < d2 || (d1 == d2 && h1 < h2);  // empty slots are (∞, -1); d is finite
  }
  int k_;
  std::vector<double> distance_;
  std::vector<int> handle_;
  std::vector<int32_t> settled_;
};

struct QueueEntry {
  double d;
  int h, node;
  bool operator>(const QueueEntry& o) const {
    return d > o.d || (d == o.d && (h > o.h || (h == o.h && node > o.node)));
  }
};

// Runs the label-setting Dijkstra from every handle's nodes (distance 0). Returns false when
// cancelled.
bool KNearestDijkstra(const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
                      int k_effective, const Progress& progress, KNearestHandles& labels,
                      double* max_distance) {
  std::priority_queue<QueueEntry, std::vector<QueueEntry>, std::greater<QueueEntry>> queue;
  for (int h = 0; h < static_cast<int>(handle_nodes.size()); ++h)
    for (int s : handle_nodes[h])
      if (labels.Offer(s, 0.0, h)) queue.push({0.0, h, s});
  const double expected = static_cast<double>(k_effective) * domain.num_nodes();
  int64_t settled = 0, pops = 0;
  while (!queue.empty()) {
    const QueueEntry e = queue.top();
    queue.pop();
    if ((++pops & 0xffff) == 0) {
      if (progress.Cancelled()) return false;
      progress.Report("geodesic distances", settled / expected);
    }
    if (!labels.Settle(e.node, e.d, e.h)) continue;
    ++settled;
    *max_distance = std::max(*max_distance, e.d);
    for (int i = domain.graph_offsets[e.node]; i < domain.graph_offsets[e.node + 1]; ++i) {
      const int v = domain.graph_targets[i];
      const double nd = e.d + domain.graph_lengths[i];
      if (labels.Offer(v, nd, e.h)) queue.push({nd, e.h, v});
    }
  }
  return true;
}

// For each query node, the reached node nearest in Euclidean distance (a sweep over the reached
// nodes sorted by x, pruned by |Δx|).
std::vector<int> NearestReached(const RowMatrixX3d& nodes, const std::vector<int>& reached,
                                const std::vector<int>& queries) {
  std::vector<int> sorted = reached;
  std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return nodes(a, 0) < nodes(b, 0); });
  std::vector<double> xs(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) xs[i] = nodes(sorted[i], 0);
  std::vector<int> result(queries.size(), -1);
  for (size_t q = 0; q < queries.size(); ++q) {
    const Eigen::RowVector3d p = nodes.row(queries[q]);
    const long start = std::lower_bound(xs.begin(), xs.end(), p(0)) - xs.begin();
    double best = kInf;
    int best_node = -1;
    auto consider = [&](long i) {
      const double d2 = (nodes.row(sorted[i]) - p).squaredNorm();
      if (d2 < best || (d2 == best && sorted[i] < best_node)) {
        best = d2;
        best_node = sorted[i];
      }
    };
    for (long i = start; i < static_cast<long>(sorted.size()); ++i) {
      const double dx = xs[i] - p(0);
      if (dx * dx > best) break;
      consider(i);
    }
    for (long i = start - 1; i >= 0; --i) {
      const double dx = p(0) - xs[i];
      if (dx * dx > best) break;
      consider(i);
    }
    result[q] = best_node;
  }
  return result;
}

using RowMajorMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Keeps the `k` largest entries of `row` (non-negative, summing to 1; ties to the lower column),
// zeroes the rest and scales the kept ones to sum to 1.
void KeepLargest(Eigen::Ref<Eigen::RowVectorXd> row, int k, std::vector<int>& order) {
  order.clear();
  for (int c = 0; c < row.size(); ++c)
    if (row(c) > 0) order.push_back(c);
  if (static_cast<int>(order.size()) <= k) return;
  std::nth_element(order.begin(), order.begin() + k, order.end(),
                   [&row](int a, int b) { return row(a) > row(b) || (row(a) == row(b) && a < b); });
  for (size_t s = k; s < order.size(); ++s) row(order[s]) = 0.0;
  row /= row.sum();
}

// `passes` smoothing passes of W (#N by #handles) over the domain's node graph (see
// GeodesicWeightsOptions::smoothing); the nodes of `handle_nodes` stay as they are.
absl::Status SmoothOverGraph(const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
                             int passes, int k, const Progress& progress, Eigen::MatrixXd& W) {
  const int n = domain.num_nodes();
  std::vector<char> fixed(n, 0);
  for (const std::vector<int>& nodes : handle_nodes)
    for (int node : nodes) fixed[node] = 1;
  RowMajorMatrixXd current = W, next(n, W.cols());
  std::vector<int> order;
  for (int pass = 0; pass < passes; ++pass) {
    RETURN_IF_ERROR(progress.CheckCancelled());
    progress.Report("smoothing", static_cast<double>(pass) / passes);
    for (int i = 0; i < n; ++i) {
      const int begin = domain.graph_offsets[i], end = domain.graph_offsets[i + 1];
      if (fixed[i] || begin == end) {
        next.row(i) = current.row(i);
        continue;
      }
      next.row(i).setZero();
      for (int e = begin; e < end; ++e) next.row(i) += current.row(domain.graph_targets[e]);
      next.row(i) = 0.5 * current.row(i) + (0.5 / (end - begin)) * next.row(i);
      KeepLargest(next.row(i), k, order);
    }
    current.swap(next);
  }
  W = current;
  return absl::OkStatus();
}

// (1 − α) d + α d²: Dionne & de Lasa's weight is its inverse square.
double DionneDenominator(double d, double alpha) { return (1 - alpha) * d + alpha * d * d; }

}  // namespace

absl::Status GeodesicWeightsOptions::Validate() const {
  RETURN_IF_ERROR(CheckPositive("options.geodesic.falloff", falloff));
  if (std::isnan(dionne_falloff) || dionne_falloff > 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.geodesic.dionne_falloff = %g must be in [0, 1] (or negative for the power law)", dionne_falloff));
  RETURN_IF_ERROR(CheckInRange("options.geodesic.smoothing", smoothing, 0, kMaxSmoothing));
  return CheckAtLeast("options.geodesic.max_influences", max_influences, 1);
}

std::string GeodesicWeightsReport::BriefReport() const {
  return absl::StrFormat("%d unreachable nodes, %.3g s", unreachable_nodes, seconds);
}

absl::StatusOr<Eigen::MatrixXd> GeodesicVoxelWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const GeodesicWeightsOptions& options, GeodesicWeightsReport* report,
    const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ValidateGraph(domain));
  const int n = domain.num_nodes();
  const int num_handles = static_cast<int>(handle_nodes.size());
  if (num_handles == 0) return absl::InvalidArgumentError("no handles");
  bool any = false;
  for (int h = 0; h < num_handles; ++h)
    for (size_t i = 0; i < handle_nodes[h].size(); ++i) {
      const int node = handle_nodes[h][i];
      if (node < 0 || node >= n)
        return absl::InvalidArgumentError(
            absl::StrFormat("handle_nodes[%d][%d] = %d is out of range (%d nodes)", h, i, node, n));
      any = true;
    }
  if (!any) return absl::InvalidArgumentError("every handle is empty (no handle has a node)");
  RETURN_IF_ERROR(progress.CheckCancelled());

  // ε: half the mean edge length (a small fraction of the domain's size for an edgeless graph).
  double epsilon = 0.0;
  if (!domain.graph_lengths.empty()) {
    for (double l : domain.graph_lengths) epsilon += l;
    epsilon *= 0.5 / domain.graph_lengths.size();
  }
  if (!(epsilon > 0)) {
    const double diag =
        (domain.nodes.colwise().maxCoeff() - domain.nodes.colwise().minCoeff()).norm();
    epsilon = diag > 0 ? 1e-3 * diag : 1.0;
  }

  const bool dionne = options.dionne_falloff >= 0;
  const double alpha = options.dionne_falloff;
  const double diagonal =
      std::max((domain.nodes.colwise().maxCoeff() - domain.nodes.colwise().minCoeff()).norm(), epsilon);

  // 1. Distances to each node's k nearest handles.
  const int k = std::min(options.max_influences, num_handles);
  int non_empty = 0;
  for (const std::vector<int>& nodes : handle_nodes) non_empty += !nodes.empty();
  KNearestHandles best(n, k);
  double max_distance = 0.0;
  if (!KNearestDijkstra(domain, handle_nodes, std::min(k, non_empty), progress.Sub(0.0, 0.9), best,
                        &max_distance))
    return absl::CancelledError("cancelled");

  // 2. Weights from the k nearest handles.
  progress.Report("geodesic weights", 0.9);
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(n, num_handles);
  std::vector<int> reached, unreached;
  reached.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (best.count(i) == 0) {
      unreached.push_back(i);
      continue;
    }
    reached.push_back(i);
    if (best.distance(i, 0) == 0) {
      // On a handle's own nodes: weight 1 (split evenly if several handles claim the node).
      int zeros = 0;
      while (zeros < best.count(i) && best.distance(i, zeros) == 0) ++zeros;
      for (int s = 0; s < zeros; ++s) W(i, best.handle(i, s)) = 1.0 / zeros;
      continue;
    }
    // (d_s + ε)^(−f) / Σ, or Dionne & de Lasa's (1 / g(d̂_s))² / Σ, computed relative to the
    // nearest handle's to stay finite.
    const double d0 = best.distance(i, 0) + epsilon;
    const double g0 = dionne ? DionneDenominator(d0 / diagonal, alpha) : 0.0;
    double sum = 0.0;
    for (int s = 0; s < best.count(i); ++s) {
      const double ds = best.distance(i, s) + epsilon;
      const double w = dionne ? std::pow(g0 / DionneDenominator(ds / diagonal, alpha), 2)
                              : std::pow(d0 / ds, options.falloff);
      W(i, best.handle(i, s)) = w;
      sum += w;
    }
    W.row(i) /= sum;
  }
  // 3. Nodes no handle reaches copy the nearest reached node.
  if (!unreached.empty()) {
    const std::vector<int> source = NearestReached(domain.nodes, reached, unreached);
    for (size_t q = 0; q < unreached.size(); ++q) W.row(unreached[q]) = W.row(source[q]);
  }
  // 4. Smoothing.
  if (options.smoothing > 0)
    RETURN_IF_ERROR(SmoothOverGraph(domain, handle_nodes, options.smoothing, k, progress.Sub(0.95, 1.0), W));

  if (report) {
    report->max_finite_distance = max_distance;
    report->unreachable_nodes = static_cast<int>(unreached.size());
    report->seconds =
        SecondsSince(start);
  }
  progress.Report("done", 1.0);
  return W;
}

}  // namespace skinning
