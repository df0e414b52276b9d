// skinning-server: the gRPC skinning service.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>


#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/util/blas_kernels.h"
#include "core/util/cpus.h"
#include "server/convert/program_build.h"
#include "server/protobuf_log.h"
#include "server/server.h"
#include "server/store/redis_pool.h"
#include "server/store/redis_tls.h"

ABSL_FLAG(std::string, address, "0.0.0.0:50051", "host:port to listen on (port 0 picks a free port)");
ABSL_FLAG(int, threads, 0, "most gRPC worker threads; every unary call but Pose, and every WatchBake, in flight holds one (0 = 128); Pose calls and open sessions hold none");
ABSL_FLAG(int, callback_threads, 0, "threads that run the Pose calls and session frames that are not quick (gRPC callback API; 0 = twice the CPUs this process may use, by its affinity and cgroup CPU quota; at least 4)");
ABSL_FLAG(int, keepalive_seconds, 60,
          "ping a client's connection after this long without traffic while it has calls open, and close it "
          "(ending its sessions) when the ping goes unanswered for --keepalive_timeout_seconds (0 = never ping)");
ABSL_FLAG(int, keepalive_timeout_seconds, 20, "how long a keepalive ping may go unanswered");
ABSL_FLAG(int, max_sessions, 10000, "most gRPC pose and FAST sessions open at once; beyond it a new one gets RESOURCE_EXHAUSTED (0 = no limit)");
ABSL_FLAG(bool, load_baseline, false,
          "also serve skinning.internal.v1.LoadBaselineService/Echo, the raw-gRPC baseline bench/load compares with");
ABSL_FLAG(int, min_pollers, 2, "fewest gRPC threads kept waiting for new calls (0 = gRPC's default, 1)");
ABSL_FLAG(int, max_pollers, 8, "most gRPC threads waiting for new calls (0 = gRPC's default, 2)");
ABSL_FLAG(std::string, store_dir, "skinning-store", "directory of the embedded rig store (when --redis is empty)");
ABSL_FLAG(std::string, redis, "", "host:port of a Redis shared by several replicas; empty = the --store_dir directory");
ABSL_FLAG(std::string, redis_prefix, "skinning:", "prefix of this service's keys in Redis");
ABSL_FLAG(std::string, redis_password_file, "",
          "with --redis: a file whose first line is the password sent to Redis's AUTH on every connection (a "
          "mounted Secret); empty = no AUTH");
ABSL_FLAG(std::string, redis_user, "", "with --redis_password_file: the Redis ACL user (empty = the default user)");
ABSL_FLAG(bool, redis_tls, false,
          "with --redis: speak TLS to Redis (its tls-port; managed Redis services with in-transit encryption); the "
          "certificate must chain to --redis_tls_ca_file and name --redis_tls_server_name");
ABSL_FLAG(std::string, redis_tls_ca_file, "",
          "with --redis_tls: PEM CA certificates that may sign Redis's certificate (empty = the system's trust store)");
ABSL_FLAG(std::string, redis_tls_cert_file, "",
          "with --redis_tls: this server's PEM certificate chain, for a Redis that asks clients for one "
          "(tls-auth-clients); with --redis_tls_key_file");
ABSL_FLAG(std::string, redis_tls_key_file, "", "with --redis_tls_cert_file: its unencrypted PEM private key");
ABSL_FLAG(std::string, redis_tls_server_name, "",
          "with --redis_tls: the DNS name or IP address Redis's certificate must carry (empty = the host of --redis)");
ABSL_FLAG(double, store_wait_seconds, 60,
          "with --redis: how long to wait at start for Redis to answer (starting, or loading its data) before "
          "exiting 1; SIGTERM ends the wait");
ABSL_FLAG(int, max_message_mb, 64, "largest request or response in MiB");
ABSL_FLAG(int, cache_mb, 1024, "memory for the in-memory rig cache in MiB (LRU by bytes)");
ABSL_FLAG(int, bake_cache_mb, 256, "memory for finished bakes kept in memory in MiB (LRU by bytes)");
ABSL_FLAG(int, psd_cache_mb, 512, "memory for PSD models kept in memory in MiB (LRU by bytes)");
ABSL_FLAG(int, max_vertices, 2000000, "largest rig accepted, in vertices");
ABSL_FLAG(int, max_joints, 1024, "largest skeleton accepted, in joints");
ABSL_FLAG(int, max_clip_frames, 10000, "most frames in one PoseClip call");
ABSL_FLAG(int, max_gltf_reads, 2,
          "glTF uploads (CreateRig from a file) read at once; each may take hundreds of MB while it is read "
          "(0 = no limit)");
ABSL_FLAG(int, gltf_read_queue, 8,
          "glTF uploads that may wait for a turn to be read; beyond them an upload gets RESOURCE_EXHAUSTED at once");
ABSL_FLAG(int, bake_workers, 1, "bakes computed at once, at least 1 (each may use several threads)");
ABSL_FLAG(int, bake_queue, 16, "without --redis: bakes waiting beyond the workers; more get RESOURCE_EXHAUSTED (0: a bake starts only on an idle worker)");
ABSL_FLAG(std::string, role, "all",
          "all (serve calls and bake), api (serve calls; bakes go to the shared queue for workers) or "
          "worker (bake what any replica queued); api and worker need --redis");
ABSL_FLAG(int, bake_lease_ms, 10000,
          "with --redis: a running bake whose worker has not renewed its lease for this long is taken over "
          "by another worker");
ABSL_FLAG(int, bake_max_attempts, 3, "with --redis: starts of one bake (workers dying under it) before it ends FAILED");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9090",
          "host:port of the Prometheus /metrics endpoint (port 0 picks a free port); empty = no metrics");
ABSL_FLAG(std::string, health_address, "",
          "host:port of a plaintext port serving only grpc.health.v1.Health with the main port's status, for "
          "probes that cannot speak TLS (the kubelet's gRPC probe) when --tls_cert is set (port 0 picks a free "
          "port); empty = off");
ABSL_FLAG(std::string, http_address, "",
          "host:port of the HTTP front door: Connect (JSON or binary protobuf) for every method, "
          "WebSocket sessions, /healthz and the browser viewer (port 0 picks a free port); empty = off");
ABSL_FLAG(std::vector<std::string>, http_cors_origins, {},
          "comma-separated origins (https://app.example.com) whose pages may call the front door; "
          "'*' allows any; empty = same-origin pages and non-browser clients only");
ABSL_FLAG(std::string, web_dir, "web", "folder of the browser viewer served at / by the front door; empty = none");
ABSL_FLAG(int, http_threads, 4, "threads of the front door: its sockets and the quick unary calls and session frames run on them; as many more (at least 2) run the calls and frames not known to be quick; 2 more read the files of --web_dir");
ABSL_FLAG(int, http_request_timeout_ms, 10000, "a request's headers and body must arrive within this (0 = 10000)");
ABSL_FLAG(int, http_max_connections, 10000,
          "front-door connections (WebSockets included) open at once; one more is answered 503 with Retry-After "
          "and closed; 0 = no limit");
ABSL_FLAG(int64_t, http_websocket_unsent_mb, 256,
          "front door: WebSocket answers computed and not yet sent, summed over every session; at this, a session "
          "that still has an unsent answer computes no more until it is sent (clients that stop reading hold at "
          "most one answer each beyond it); 0 = no limit");
ABSL_FLAG(int64_t, http_compress_min_bytes, 0,
          "front door: unary answers of at least this many bytes are sent gzip-compressed to clients whose "
          "Accept-Encoding takes gzip (e.g. 16384 for phones on slow links; it costs the server 15-17 ms of CPU "
          "per MB of JSON); 0 = never. Compressed requests (gzip) are always accepted");
ABSL_FLAG(std::string, auth_tokens, "",
          "file of 'TOKEN TENANT' lines: every call needs 'authorization: Bearer TOKEN' and sees "
          "only its "
          "tenant's rigs and bakes; empty = no authentication");
ABSL_FLAG(double, auth_tokens_reload_seconds, 10,
          "how often the --auth_tokens file is read again: tokens added, rotated or revoked in it (a Kubernetes "
          "Secret updated in place) take effect without a restart; an invalid new content is reported and the "
          "tokens of before stay; 0 = read once at start");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of the server: serve TLS only (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificate(s): require client certificates signed by them (mutual TLS; needs "
          "--tls_cert)");
ABSL_FLAG(double, drain_seconds, 10, "on SIGTERM/SIGINT/SIGHUP, how long calls in flight may finish");

namespace {

pthread_t main_thread;

// The main thread blocks SIGTERM, SIGINT and SIGHUP and takes them with sigwait, and every thread it starts
// inherits the block. A thread that a library started before main (OpenBLAS starts its pool when
// it is loaded) does not block them, and the kernel may give a signal sent to the process to any
// thread that does not block it: there the default action ended the server at once, without a
// drain (exit 143, seen in CI). On such a thread this handler passes the signal on to the main
// thread, which blocks it until sigwait takes it.
void PassToMainThread(int sig) {
  const int saved = errno;
  pthread_kill(main_thread, sig);
  errno = saved;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: may re-execute the server with OpenBLAS's fastest kernels for this CPU.
  skinning::UseFastestBlasKernels(argv);
  absl::SetProgramUsageMessage("The skinning service's gRPC server.\nUsage: skinning-server [flags]");
  // "skinning-server 0.1.0 (Release build; gRPC …, protobuf …, Eigen …, CHOLMOD …)": --version and
  // the start's "version:" line (Abseil's own --version said "Debug build" for any build, from
  // how Debian built Abseil).
  const std::string version = skinning::DescribeProgramBuild();
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [version] { return absl::StrCat("skinning-server ", version, "\n"); };
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);
  // Debian's Abseil is built with Mutex deadlock detection on, and gRPC's locks are absl::Mutex:
  // every lock and unlock updated a global lock-order graph (4-5 % of the server's CPU under
  // bench/load). The tests keep it; the server does not need it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Protobuf logs a line for each request with a string that is not UTF-8: at most 10 per 10 s.
  skinning::LimitProtobufLogging();
  // Every connection is a file descriptor. A soft limit below the hard one (1024 is common) ran
  // out under a thousand browser sessions, and gRPC's listener never accepts again after accept()
  // failed with EMFILE (grpc/grpc#20418): take the hard limit, as most servers do.
  if (rlimit files; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    const rlim_t was = files.rlim_cur;
    files.rlim_cur = files.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0)
      std::cerr << "cannot raise the open-file limit from " << was << ": " << std::strerror(errno) << "\n";
  }

  // Block the shutdown signals in every thread (gRPC's included) and take them with sigwait.
  // SIGHUP (a closed terminal; a `kill -HUP` meant as "reload", which the server has nothing to
  // reload for) drains as SIGTERM does: its default action ended the server at once, dropping the
  // calls in flight.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // OpenBLAS's threads were started before this block (when it was loaded): they took SIGTERM,
  // and while METIS ran (CHOLMOD's orderings) its handler longjmp'ed there and crashed the server.
  skinning::RestartOpenBlasThreads();
  // (Installed after the block: on the main thread itself the handler would pass the signal to
  // itself again and again.)
  main_thread = pthread_self();
  struct sigaction pass {};
  pass.sa_handler = PassToMainThread;
  pass.sa_flags = SA_RESTART;
  sigfillset(&pass.sa_mask);
  sigaction(SIGTERM, &pass, nullptr);
  sigaction(SIGINT, &pass, nullptr);
  sigaction(SIGHUP, &pass, nullptr);

  skinning::ServerOptions options;
  options.address = absl::GetFlag(FLAGS_address);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.callback_threads = absl::GetFlag(FLAGS_callback_threads);
  options.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.keepalive_seconds = absl::GetFlag(FLAGS_keepalive_seconds);
  options.keepalive_timeout_seconds = absl::GetFlag(FLAGS_keepalive_timeout_seconds);
  options.min_pollers = absl::GetFlag(FLAGS_min_pollers);
  options.load_baseline = absl::GetFlag(FLAGS_load_baseline);
  options.max_pollers = absl::GetFlag(FLAGS_max_pollers);
  options.store_dir = absl::GetFlag(FLAGS_store_dir);
  options.redis_address = absl::GetFlag(FLAGS_redis);
  options.redis_prefix = absl::GetFlag(FLAGS_redis_prefix);
  if (const std::string file = absl::GetFlag(FLAGS_redis_password_file); !file.empty()) {
    std::ifstream in(file);
    std::string password;
    if (!in || !std::getline(in, password)) {
      std::cerr << "skinning-server: --redis_password_file: cannot read " << file << std::endl;
      return 1;
    }
    while (!password.empty() && (password.back() == '\r' || password.back() == ' ' || password.back() == '\t'))
      password.pop_back();
    if (password.empty()) {
      std::cerr << "skinning-server: --redis_password_file: " << file << " starts with an empty line" << std::endl;
      return 1;
    }
    options.redis_credentials.password = password;
    options.redis_credentials.user = absl::GetFlag(FLAGS_redis_user);
  } else if (!absl::GetFlag(FLAGS_redis_user).empty()) {
    std::cerr << "skinning-server: --redis_user needs --redis_password_file" << std::endl;
    return 1;
  }
  skinning::RedisTlsOptions redis_tls;
  redis_tls.ca_file = absl::GetFlag(FLAGS_redis_tls_ca_file);
  redis_tls.cert_file = absl::GetFlag(FLAGS_redis_tls_cert_file);
  redis_tls.key_file = absl::GetFlag(FLAGS_redis_tls_key_file);
  redis_tls.server_name = absl::GetFlag(FLAGS_redis_tls_server_name);
  if (absl::GetFlag(FLAGS_redis_tls)) {
    if (options.redis_address.empty()) {
      std::cerr << "skinning-server: --redis_tls needs --redis (the embedded store is a directory)" << std::endl;
      return 1;
    }
    absl::StatusOr<std::shared_ptr<const skinning::RedisTlsContext>> tls = skinning::RedisTlsContext::Create(redis_tls);
    if (!tls.ok()) {
      std::cerr << "skinning-server: " << tls.status().message() << std::endl;
      return 1;
    }
    options.redis_credentials.tls = *std::move(tls);
  } else if (!redis_tls.ca_file.empty() || !redis_tls.cert_file.empty() || !redis_tls.key_file.empty() ||
             !redis_tls.server_name.empty()) {
    std::cerr << "skinning-server: the --redis_tls_* flags need --redis_tls" << std::endl;
    return 1;
  }
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) << 20;
  options.cache_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_cache_mb)) << 20;
  options.bake_cache_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_bake_cache_mb)) << 20;
  options.psd_cache_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_psd_cache_mb)) << 20;
  options.limits.max_vertices = absl::GetFlag(FLAGS_max_vertices);
  options.limits.max_triangles = 2 * absl::GetFlag(FLAGS_max_vertices);
  options.limits.max_joints = absl::GetFlag(FLAGS_max_joints);
  options.max_clip_frames = absl::GetFlag(FLAGS_max_clip_frames);
  options.max_gltf_reads = absl::GetFlag(FLAGS_max_gltf_reads);
  options.gltf_read_queue = absl::GetFlag(FLAGS_gltf_read_queue);
  options.bakes.workers = absl::GetFlag(FLAGS_bake_workers);
  options.bakes.max_queue = absl::GetFlag(FLAGS_bake_queue);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.role = absl::GetFlag(FLAGS_role);
  options.bake_lease = std::chrono::milliseconds(absl::GetFlag(FLAGS_bake_lease_ms));
  options.bake_max_attempts = absl::GetFlag(FLAGS_bake_max_attempts);
  options.http_address = absl::GetFlag(FLAGS_http_address);
  options.health_address = absl::GetFlag(FLAGS_health_address);
  options.http_cors_origins = absl::GetFlag(FLAGS_http_cors_origins);
  options.web_dir = absl::GetFlag(FLAGS_web_dir);
  options.http_threads = absl::GetFlag(FLAGS_http_threads);
  options.http_request_timeout = std::chrono::milliseconds(absl::GetFlag(FLAGS_http_request_timeout_ms));
  options.http_max_connections = absl::GetFlag(FLAGS_http_max_connections);
  options.http_websocket_unsent_mb = absl::GetFlag(FLAGS_http_websocket_unsent_mb);
  options.http_compress_min_bytes = static_cast<size_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_http_compress_min_bytes)));
  options.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens);
  if (const double reload = absl::GetFlag(FLAGS_auth_tokens_reload_seconds); reload >= 0 && reload <= 86400) {
    options.auth_tokens_reload = std::chrono::milliseconds(static_cast<int64_t>(reload * 1000));
  } else {
    std::cerr << "skinning-server: --auth_tokens_reload_seconds must be in [0, 86400], not " << reload << std::endl;
    return 2;
  }
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);

  // A shared store that does not answer yet (Redis starting with the pods, restarting, or loading
  // its append-only file) is waited for, so that replicas started with it do not exit and go into
  // a crash-loop back-off. Every other error (a port in use, a bad flag) stops the server at once.
  if (absl::Status valid = skinning::ValidateServerOptions(options); !valid.ok()) {
    std::cerr << "skinning-server: " << valid.message() << std::endl;
    return 1;
  }
  const double store_wait = absl::GetFlag(FLAGS_store_wait_seconds);
  const auto wait_start = std::chrono::steady_clock::now();
  double reported = -1;
  absl::StatusOr<std::unique_ptr<skinning::BlobStore>> store = skinning::OpenStore(options);
  for (; absl::IsUnavailable(store.status()) && !skinning::IsStoreRefusal(store.status());
       store = skinning::OpenStore(options)) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
    if (waited >= store_wait) {
      std::cerr << "skinning-server: "
                << (store_wait > 0 ? absl::StrCat("gave up waiting for the shared store after ", store_wait,
                                                  " s (--store_wait_seconds): ")
                                   : std::string())
                << store.status().message() << std::endl;
      return 1;
    }
    if (reported < 0 || waited - reported >= 10) {
      std::printf("skinning-server: waiting for the shared store (%.0f of %g s): %s\n", waited, store_wait,
                  std::string(store.status().message()).c_str());
      std::fflush(stdout);
      reported = waited;
    }
    const double pause = std::min(1.0, store_wait - waited);
    timespec step{static_cast<time_t>(pause), static_cast<long>((pause - static_cast<time_t>(pause)) * 1e9)};
    if (const int sig = sigtimedwait(&signals, nullptr, &step); sig > 0) {
      std::printf("skinning-server: %s received while waiting for the shared store; stopped\n", strsignal(sig));
      return 0;
    }
  }
  if (!store.ok()) {
    std::cerr << "skinning-server: " << store.status().message() << std::endl;
    return 1;
  }
  absl::StatusOr<std::unique_ptr<skinning::SkinningServer>> server =
      skinning::SkinningServer::Start(options, *std::move(store));
  if (!server.ok()) {
    std::cerr << "skinning-server: " << server.status().message() << std::endl;
    return 1;
  }
  // Tests and scripts read this line to learn the port.
  const std::string store_name = options.redis_address.empty()
                                     ? options.store_dir
                                     : (options.redis_credentials.tls ? "rediss://" : "redis://") +
                                           options.redis_address + " prefix " + options.redis_prefix;
  std::printf("skinning-server listening on port %d (store %s)\n", (*server)->port(), store_name.c_str());
  std::printf("skinning-server version: %s\n", version.c_str());
  std::printf("skinning-server security: %s\n", (*server)->SecuritySummary().c_str());
  std::printf("skinning-server role: %s\n", options.role.c_str());
  if (!(*server)->older_bakes_summary().empty())
    std::printf("skinning-server store: %s\n", (*server)->older_bakes_summary().c_str());
  // Bake, solver and callback threads follow this count, not the node's cores.
  std::printf("skinning-server cpus: %s\n", skinning::DescribeCpuLimits(skinning::ProcessCpuLimits()).c_str());
  // The kernels of CHOLMOD's factorizations and solves (bakes, elastic and FAST solves).
  std::printf("skinning-server blas: %s\n", skinning::DescribeBlas().c_str());
  if (!options.auth_tokens_file.empty() && options.tls_cert_file.empty())
    std::fprintf(stderr,
                 "skinning-server: warning: --auth_tokens without --tls_cert: bearer tokens travel "
                 "in plaintext\n");
  if ((*server)->metrics_port() != 0) std::printf("skinning-server metrics on port %d\n", (*server)->metrics_port());
  if ((*server)->http_port() != 0) std::printf("skinning-server http on port %d\n", (*server)->http_port());
  if ((*server)->health_port() != 0) std::printf("skinning-server health on port %d\n", (*server)->health_port());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("skinning-server: %s received, draining for up to %.1f s\n", strsignal(sig),
              absl::GetFlag(FLAGS_drain_seconds));
  std::fflush(stdout);
  (*server)->Shutdown(std::chrono::milliseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_drain_seconds) * 1000)));
  (*server)->Wait();
  server->reset();
  std::printf("skinning-server: stopped\n");
  return 0;
}
