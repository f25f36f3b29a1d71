// Tuned loom kernels side by side with OpenBLAS and oneDNN on the CPU, in one run:
//   (a) float32 matmul (default 1024 and 2048): loom vs cblas_sgemm vs dnnl_sgemm;
//   (b) dense + bias + relu 1024x1024x1024: loom's fused kernel vs sgemm followed by a
//       separate bias+relu pass (OpenBLAS and oneDNN's sgemm);
//   (c) conv2d on ResNet-18's layers, batch 1: loom's conv2d_nchwc on channel-blocked arrays
//       (nChw16c data and output, OIhw16i16o kernel, converted from NCHW/OIHW untimed) vs
//       oneDNN's direct convolution in the layouts it picks;
//   (d) "transformer": the dense layers of BERT-base and ViT-B/16, X[M,K] * W[N,K]^T over
//       M = 128, 197 and 384 tokens with (N, K) = (768, 768), (2304, 768), (3072, 768) and
//       (768, 3072): loom's dense_pack on the weight packed once (as a compiled network
//       packs its constant weights) vs cblas_sgemm and dnnl_sgemm on the plain weight. As in
//       a network, whose weights are not in cache when their layer runs, each call takes the
//       next of --weight-copies copies of the weight (every library alike); --weight-copies
//       1 measures a weight that stays in cache. --transformer-trials (default 0: the
//       template's untuned config) tunes these too.
//
// Each workload is tuned with the XGBoost tuner (one log per workload in --log-dir; with
// --resume a rerun reads the log, never measures a config twice and only adds the trials
// that are missing), or with --no-tune only read from existing logs, then built from its
// best record (tuner::build_best; the template's default config when there is none).
// Outputs are checked against the peer before timing; times are medians of repeats after a
// warm-up, at each thread count. A measured FMA peak gives each result as % of peak.
//
// Threads: loom's pool is resized (runtime::ThreadPool::global().resize), OpenBLAS with
// openblas_set_num_threads. The installed oneDNN uses the OpenMP CPU runtime
// (DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP; it has no dnnl::set_max_threads), so its threads are
// set with omp_set_num_threads: dnnl_sgemm reads it at each call, a primitive when it is
// created (its work partition is fixed then), so the convolutions are created anew for each
// thread count, after omp_set_num_threads.
//
// oneDNN's convolution is created with format_tag::any for source, weights and destination,
// so it picks its own blocked layouts; the reorders from and to the user's NCHW/OIHW arrays
// run outside the timed region (a second column, "+reorders", times src and dst reorders
// together with the convolution; the weights reorder is never timed).
//
//   bench/tuned_cpu [--log-dir DIR] [--trials N] [--conv-trials N] [--resume | --no-tune]
//                   [--sections matmul,dense,conv,transformer] [--matmul-sizes 1024,2048]
//                   [--threads 1,2] [--repeat R] [--transformer-trials N] [--weight-copies C]
//                   [--json FILE]
#include <cblas.h>
#include <loom/loom.h>
#include <loom/records/record.h>
#include <loom/runtime/thread_pool.h>
#include <loom/tuner/build_best.h>
#include <loom/tuner/tuner.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "dnnl_conv.h"
#include "peers.h"

using namespace loom;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string log_dir = "tuned_cpu_logs";
  int trials = 200;      // matmul and dense
  int conv_trials = 64;  // each conv layer
  int transformer_trials = 0;
  int weight_copies = 8;
  bool resume = false, no_tune = false;
  std::vector<std::string> sections = {"matmul", "dense", "conv", "transformer"};
  std::vector<int> matmul_sizes = {1024, 2048};
  std::vector<int> threads = {1, 2};
  int repeat = 7;
  std::string json;
  double min_repeat_ms = 100;  // of the tuner's measurer
  double timeout_s = 30;       // of the tuner's measurer (build, and run)
  double settle_ms = 200;      // pause before each timed block with more than one thread
  bool verbose = false;
  bool best = false;  // report the fastest repeat instead of the median
};

cli::Command command() {
  cli::Command c;
  c.program = "";
  c.name = "tuned_cpu";
  c.usage = "[options]";
  c.synopsis = "tuned loom matmul, dense+bias+relu and ResNet-18 convolutions next to OpenBLAS and oneDNN";
  c.options = {
      {"--log-dir", "DIR", "tuning logs, one JSON-lines file per workload (default tuned_cpu_logs)"},
      {"--trials", "N", "XGB trials for each matmul and dense workload (default 200)"},
      {"--conv-trials", "N", "XGB trials for each conv layer (default 64)"},
      {"--transformer-trials", "N", "XGB trials for each transformer dense layer (default 0: untuned)"},
      {"--weight-copies", "C",
       "copies of each transformer weight, one per call in turn (default 8; 1: a weight that stays in cache)"},
      {"--resume", "", "reuse existing logs: only the trials missing up to N are measured"},
      {"--no-tune", "", "do not tune; build each workload from its log (default config if none)"},
      {"--sections", "LIST", "any of matmul,dense,conv,transformer (default all)"},
      {"--matmul-sizes", "LIST", "square matmul sizes (default 1024,2048)"},
      {"--threads", "LIST", "thread counts for every library (default 1,2)"},
      {"--repeat", "R", "timed repeats per measurement; the median is reported (default 7)"},
      {"--min-repeat-ms", "MS", "the tuner's min_repeat_ms (default 100)"},
      {"--timeout-s", "S", "the tuner's limit to build, and to run, one candidate (default 30)"},
      {"--settle-ms", "MS", "pause before each multi-threaded timed block (default 200)"},
      {"--json", "FILE", "also write the results as JSON"},
      {"--best", "", "report the fastest repeat instead of the median (for loaded machines)"},
      {"--verbose", "", "the tuner's progress lines"},
  };
  return c;
}

Options options_from(const cli::Args& a) {
  Options o;
  o.log_dir = a.str("--log-dir", o.log_dir);
  o.trials = int(a.integer("--trials", o.trials, 0, 1 << 30));
  o.conv_trials = int(a.integer("--conv-trials", o.conv_trials, 0, 1 << 30));
  o.transformer_trials = int(a.integer("--transformer-trials", o.transformer_trials, 0, 1 << 30));
  o.weight_copies = int(a.integer("--weight-copies", o.weight_copies, 1, 64));
  o.resume = a.has("--resume");
  o.no_tune = a.has("--no-tune");
  if (a.has("--sections")) o.sections = bench::split_list(a.str("--sections"), ',');
  for (const auto& s : o.sections)
    if (s != "matmul" && s != "dense" && s != "conv" && s != "transformer")
      a.usage_error("--sections: unknown section '{}' (expected matmul, dense, conv, transformer)", s);
  bench::int_list_option(a, "--matmul-sizes", &o.matmul_sizes);
  bench::int_list_option(a, "--threads", &o.threads);
  o.repeat = int(a.integer("--repeat", o.repeat, 1, 1000));
  o.min_repeat_ms = a.number("--min-repeat-ms", o.min_repeat_ms, 0);
  o.timeout_s = a.number("--timeout-s", o.timeout_s, 0.001);
  o.settle_ms = a.number("--settle-ms", o.settle_ms, 0);
  o.json = a.str("--json");
  o.best = a.has("--best");
  o.verbose = a.has("--verbose");
  if (o.resume && o.no_tune) a.usage_error("--resume and --no-tune exclude each other");
  return o;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

runtime::NDArray f32(std::vector<int64_t> shape, uint64_t seed = 0) {
  runtime::NDArray a = runtime::NDArray::empty(std::move(shape), DataType::Float(32));
  if (seed) a.fill_random(seed);
  return a;
}

void set_threads(int n) {
  runtime::ThreadPool::global().resize(n);
  cli::set_peer_threads(n);  // OpenBLAS, and OpenMP's for oneDNN and dnnl_sgemm
}

/// `loom bench`'s peer for a workload (tools/peers.h), so that both run the same OpenBLAS calls.
cli::Peer shared_peer(const records::Workload& w) {
  std::string why;
  std::optional<cli::Peer> p = cli::find_peer(w, &why);
  if (!p) throw Error(fmt::format("tuned_cpu: no peer for {}: {}", w.op, why));
  return *p;
}

/// One peer implementation: runs on the case's inputs into its own output.
struct Peer {
  std::string name;
  std::function<void()> run;
  runtime::NDArray out;
  bool reference = false;  // loom's result is checked against this peer's
};

/// One benchmarked workload.
struct Case {
  std::string section, label;
  tuner::Task task;
  int trials = 0;
  std::string log;
  std::vector<runtime::NDArray> args;  // loom's call arguments, output last
  /// Where loom's output is in another layout than the peers': converts it into `compared`
  /// (outside the timed region), which is then checked instead.
  std::function<void()> unpack;
  runtime::NDArray compared;
  /// The peers, made after the thread count is set: oneDNN fixes a primitive's number of
  /// threads when the primitive is created.
  std::function<std::vector<Peer>()> make_peers;
  /// Where set, calls loom's function in place of calling it on `args`.
  std::function<void(const runtime::PackedFunc&)> call;
};

// ---------------------------------------------------------------- workloads and peers

Case matmul_case(int n) {
  Case c{"matmul",
         fmt::format("matmul {0}x{0}x{0}", n),
         tuner::Task::create("matmul", {n, n, n}, Target::host()),
         0,
         "",
         {},
         {},
         {},
         {},
         {}};
  runtime::NDArray a = f32({n, n}, 1), b = f32({n, n}, 2);
  c.args = {a, b, f32({n, n})};
  runtime::NDArray o1 = f32({n, n}), o2 = f32({n, n});
  const cli::Peer openblas = shared_peer(c.task.workload());
  const std::vector<runtime::NDArray> inputs = {a, b};
  c.make_peers = [=] {
    std::vector<Peer> peers;
    peers.push_back({"OpenBLAS", [=] { openblas.run(inputs, o1); }, o1, true});
    peers.push_back({"oneDNN",
                     [=] {
                       dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f,
                                  o2.data<float>(), n);
                     },
                     o2, false});
    return peers;
  };
  return c;
}

void bias_relu(float* out, const float* bias, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float* r = out + i * cols;
    for (int64_t j = 0; j < cols; ++j) r[j] = std::max(r[j] + bias[j], 0.0f);
  }
}

/// relu(X[N,K] * W[M,K]^T + bias[M]).
Case dense_case(int N, int M, int K) {
  Case c{"dense",
         fmt::format("dense+bias+relu {}x{}x{}", N, M, K),
         tuner::Task::create("dense_bias_relu", {N, M, K}, Target::host()),
         0,
         "",
         {},
         {},
         {},
         {},
         {}};
  runtime::NDArray x = f32({N, K}, 3), w = f32({M, K}, 4), bias = f32({M}, 5);
  c.args = {x, w, bias, f32({N, M})};
  runtime::NDArray o1 = f32({N, M}), o2 = f32({N, M});
  const cli::Peer openblas = shared_peer(c.task.workload());  // cblas_sgemm, then the bias/relu pass
  const std::vector<runtime::NDArray> inputs = {x, w, bias};
  c.make_peers = [=] {
    std::vector<Peer> peers;
    peers.push_back({"OpenBLAS+pass", [=] { openblas.run(inputs, o1); }, o1, true});
    peers.push_back({"oneDNN+pass",
                     [=] {
                       dnnl_sgemm('N', 'T', N, M, K, 1.0f, x.data<float>(), K, w.data<float>(), K, 0.0f,
                                  o2.data<float>(), M);
                       bias_relu(o2.data<float>(), bias.data<float>(), N, M);
                     },
                     o2, false});
    return peers;
  };
  return c;
}

/// A transformer weight W[N,K] in `copies` copies (equal values, distinct memory), plain
/// (for the peers) and packed as dense_pack takes it ([ceil(N/16), K, 16]), shared by the
/// cases of every token count.
struct RotatedWeight {
  std::vector<runtime::NDArray> plain, packed;
};

std::shared_ptr<RotatedWeight> rotated_weight(int N, int K, int copies) {
  auto r = std::make_shared<RotatedWeight>();
  const int64_t blocks = (N + 15) / 16;
  for (int c = 0; c < copies; ++c) {
    runtime::NDArray w = f32({N, K}, 100), p = f32({blocks, K, 16});  // equal values: one reference
    const float* src = w.data<float>();
    float* dst = p.data<float>();
    for (int64_t j = 0; j < blocks * 16; ++j)
      for (int64_t k = 0; k < K; ++k) dst[((j / 16) * K + k) * 16 + j % 16] = j < N ? src[j * K + k] : 0.0f;
    r->plain.push_back(w);
    r->packed.push_back(p);
  }
  return r;
}

/// X[M,K] * W[N,K]^T, each call on the next copy of W.
Case transformer_case(int M, int N, int K, const std::shared_ptr<RotatedWeight>& w) {
  Case c{"transformer",
         fmt::format("dense {}x{}x{}", M, N, K),
         tuner::Task::create("dense_pack", {M, N, K}, Target::host()),
         0,
         "",
         {},
         {},
         {},
         {},
         {}};
  runtime::NDArray x = f32({M, K}, 3), out = f32({M, N});
  c.args = {x, w->packed[0], out};
  auto next = std::make_shared<size_t>(0);
  c.call = [=](const runtime::PackedFunc& fn) { fn(x, w->packed[(*next)++ % w->packed.size()], out); };
  runtime::NDArray o1 = f32({M, N}), o2 = f32({M, N});
  c.make_peers = [=] {
    auto n1 = std::make_shared<size_t>(0), n2 = std::make_shared<size_t>(0);
    std::vector<Peer> peers;
    peers.push_back({"OpenBLAS",
                     [=] {
                       const float* b = w->plain[(*n1)++ % w->plain.size()].data<float>();
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x.data<float>(), K, b, K,
                                   0.0f, o1.data<float>(), N);
                     },
                     o1, true});
    peers.push_back({"oneDNN",
                     [=] {
                       const float* b = w->plain[(*n2)++ % w->plain.size()].data<float>();
                       dnnl_sgemm('N', 'T', M, N, K, 1.0f, x.data<float>(), K, b, K, 0.0f, o2.data<float>(), N);
                     },
                     o2, false});
    return peers;
  };
  return c;
}

using ConvLayer = bench::ConvShape;

/// loom's conv2d_nchwc on arrays blocked as oneDNN blocks them (nChw16c, OIhw16i16o; the
/// conversions are not timed, like oneDNN's weight reorder), checked after unblocking.
Case conv_case(const ConvLayer& l) {
  const int OH = l.out();
  Case c{"conv",
         fmt::format("conv C={} H={} K={} {}x{} s{} p{}", l.C, l.H, l.K, l.R, l.R, l.stride, l.pad),
         tuner::Task::create("conv2d_nchwc", {1, l.C, l.H, l.H, l.K, l.R, l.R}, Target::host(), "float32",
                             {{"stride", std::to_string(l.stride)}, {"pad", std::to_string(l.pad)}}),
         0,
         "",
         {},
         {},
         {},
         {},
         {}};
  runtime::NDArray data = f32({1, l.C, l.H, l.H}, 6), kernel = f32({l.K, l.C, l.R, l.R}, 7);
  runtime::NDArray bdata = f32({1, l.C / 16, l.H, l.H, 16}), bkernel = f32({l.K / 16, l.C / 16, l.R, l.R, 16, 16});
  bench::convert_nchw16c(data.data<float>(), bdata.data<float>(), l.C, l.H * l.H, true);
  bench::block_oihw16i16o(kernel.data<float>(), bkernel.data<float>(), l.K, l.C, l.R * l.R);
  runtime::NDArray bout = f32({1, l.K / 16, OH, OH, 16});
  c.args = {bdata, bkernel, bout};
  c.compared = f32({1, l.K, OH, OH});
  runtime::NDArray compared = c.compared;
  c.unpack = [=]() mutable { bench::convert_nchw16c(compared.data<float>(), bout.data<float>(), l.K, OH * OH, false); };
  runtime::NDArray o1 = f32({1, l.K, OH, OH}), o2 = f32({1, l.K, OH, OH});

  c.make_peers = [=] {
    std::vector<Peer> peers;
    std::shared_ptr<bench::DnnlConv> d = bench::make_dnnl_conv(l, data.data<float>(), kernel.data<float>(),
                                                               o1.data<float>());
    // Timed: the convolution alone. Its result is reordered to NCHW once, for the check, by
    // the peer below (which runs before any comparison).
    d->src_in();
    peers.push_back({"oneDNN", [d] { d->run(); }, o1, true});
    peers.push_back({"oneDNN+reorders",
                     [=] {
                       d->src_in();
                       d->run();
                       d->dst_out();
                       std::copy_n(o1.data<float>(), o1.numel(), o2.data<float>());
                     },
                     o2, false});
    return peers;
  };
  return c;
}

// ---------------------------------------------------------------- tuning

void tune(const Case& c, const Options& o) {
  bench::TuneRequest r;
  r.tag = "tuned_cpu";
  r.label = c.label;
  r.trials = c.trials;
  r.resume = o.resume;
  r.no_tune = o.no_tune;
  r.verbose = o.verbose;
  r.measure.min_repeat_ms = o.min_repeat_ms;
  r.measure.timeout_s = o.timeout_s;
  bench::tune_xgb(c.task, c.log, r);
}

// ---------------------------------------------------------------- measuring

struct Result {
  std::string section, label;
  int threads = 0;
  int records = 0;
  double flop = 0;
  double loom_gflops = 0, default_gflops = 0, peak_gflops = 0;
  std::vector<std::pair<std::string, double>> peers;  // name, GFLOP/s
  double max_rel_err = 0;
  std::string config;
};

constexpr double kTolerance = 1e-3;

}  // namespace

int run(const Options& o) {
  fs::create_directories(o.log_dir);
  const Target host = Target::host();

  std::vector<Case> cases;
  if (has(o.sections, "matmul"))
    for (int n : o.matmul_sizes) cases.push_back(matmul_case(n));
  if (has(o.sections, "dense")) cases.push_back(dense_case(1024, 1024, 1024));
  if (has(o.sections, "conv")) {
    for (const ConvLayer& l : std::vector<ConvLayer>{{64, 56, 64, 3, 1, 1},
                                                     {64, 56, 128, 1, 2, 0},
                                                     {128, 28, 128, 3, 1, 1},
                                                     {256, 14, 256, 3, 1, 1},
                                                     {512, 7, 512, 3, 1, 1}})
      cases.push_back(conv_case(l));
  }
  if (has(o.sections, "transformer")) {
    for (auto [N, K] : std::vector<std::pair<int, int>>{{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}}) {
      std::shared_ptr<RotatedWeight> w = rotated_weight(N, K, o.weight_copies);
      for (int M : {128, 197, 384}) cases.push_back(transformer_case(M, N, K, w));
    }
  }
  for (Case& c : cases) {
    c.trials = c.section == "conv" ? o.conv_trials : c.section == "transformer" ? o.transformer_trials : o.trials;
    c.log = (fs::path(o.log_dir) / (bench::sanitize(c.task.key()) + ".jsonl")).string();
  }

  // All tuning first (the measurer forks workers; nothing else runs meanwhile).
  for (Case& c : cases) tune(c, o);

  std::string isa;
  std::map<int, double> peak;
  for (int nt : o.threads) peak[nt] = bench::fma_peak_gflops(nt, 0.03, 30, &isa);
  std::printf("loom tuned_cpu: target %s (%s), float32, %s of %d interleaved repeats after a warm-up\n",
              host.str().c_str(), tuner::host_cpu_name().c_str(), o.best ? "fastest" : "median", o.repeat);
  for (int nt : o.threads)
    std::printf("measured FMA peak (%s): %d thread%s %.1f GFLOP/s (%.1f per thread)\n", isa.c_str(), nt,
                nt > 1 ? "s" : "", peak[nt], peak[nt] / nt);
  std::printf(
      "oneDNN %d.%d.%d (CPU runtime OpenMP; threads via omp_set_num_threads), conv reorders outside the "
      "timed region unless '+reorders'\n\n",
      dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);

  std::vector<Result> results;
  bool ok = true;
  for (Case& c : cases) {
    records::ApplyHistoryBest best;
    if (fs::exists(c.log)) best = records::ApplyHistoryBest(c.log);
    std::optional<records::Record> rec = best.best(c.task.workload(), c.task.target().str());
    runtime::Module tuned = tuner::build_best(c.task, best);
    runtime::Module fallback = tuner::build_best(c.task, records::ApplyHistoryBest(), nullptr);
    const std::string fname = c.task.workload().op;
    runtime::PackedFunc f = tuned.get_function(fname), fdef = fallback.get_function(fname);
    runtime::NDArray& out = c.args.back();
    auto call = [&](const runtime::PackedFunc& fn) {
      if (c.call)
        c.call(fn);
      else if (c.args.size() == 3)
        fn(c.args[0], c.args[1], c.args[2]);
      else
        fn(c.args[0], c.args[1], c.args[2], c.args[3]);
    };

    for (int nt : o.threads) {
      set_threads(nt);
      std::vector<Peer> peers = c.make_peers();
      for (Peer& p : peers) {
        bench::poison(p.out.data<float>(), p.out.numel());
        p.run();
      }
      const Peer& ref = *std::find_if(peers.begin(), peers.end(), [](const Peer& p) { return p.reference; });
      double err = 0;
      for (const runtime::PackedFunc* fn : {&f, &fdef}) {
        bench::poison(out.data<float>(), out.numel());
        call(*fn);
        if (c.unpack) c.unpack();
        const runtime::NDArray& got = c.unpack ? c.compared : out;
        err = std::max(err, bench::max_rel_err(got.data<float>(), ref.out.data<float>(), got.numel()));
      }
      for (const Peer& p : peers)
        if (&p != &ref)
          err = std::max(err, bench::max_rel_err(p.out.data<float>(), ref.out.data<float>(), ref.out.numel()));
      if (!(err < kTolerance)) {
        std::fprintf(stderr, "tuned_cpu: %s, %d thread(s): results differ (max rel err %.3e vs %s)\n", c.label.c_str(),
                     nt, err, ref.name.c_str());
        ok = false;
        continue;
      }

      Result r;
      r.section = c.section;
      r.label = c.label;
      r.threads = nt;
      r.records = int(bench::task_records(c.log, c.task).size());
      r.flop = c.task.flop();
      r.peak_gflops = peak[nt];
      r.max_rel_err = err;
      r.config = rec ? fmt::format("{}", rec->config.index) : "default";
      std::vector<std::function<void()>> fs = {[&] { call(f); }, [&] { call(fdef); }};
      for (Peer& p : peers) fs.push_back(p.run);
      std::vector<double> t = bench::interleaved_times(fs, o.repeat, 20, nt > 1 ? o.settle_ms : 0, o.best);
      r.loom_gflops = r.flop / t[0] * 1e-9;
      r.default_gflops = r.flop / t[1] * 1e-9;
      for (size_t i = 0; i < peers.size(); ++i) r.peers.emplace_back(peers[i].name, r.flop / t[i + 2] * 1e-9);
      results.push_back(r);
      std::fprintf(stderr, "[tuned_cpu] %s, %d thread(s): loom %.1f GFLOP/s\n", c.label.c_str(), nt, r.loom_gflops);
    }
  }

  // ---- tables, one per section
  for (const std::string& section : {"matmul", "dense", "conv", "transformer"}) {
    std::vector<const Result*> rows;
    for (const Result& r : results)
      if (r.section == section) rows.push_back(&r);
    if (rows.empty()) continue;
    std::printf("%-32s %3s %6s %9s %8s %7s", section == std::string("conv") ? "conv2d NCHW16c (batch 1)" : section.c_str(),
                "thr", "trials", "loom", "%peak", "default");
    for (const auto& [name, g] : rows[0]->peers) std::printf(" %16s", name.c_str());
    for (const auto& [name, g] : rows[0]->peers) std::printf(" %16s", ("loom/" + name).c_str());
    std::printf(" %9s\n", "max err");
    std::map<int, std::vector<std::vector<double>>> ratios;  // threads -> per peer ratios
    for (const Result* r : rows) {
      std::printf("%-32s %3d %6d %9.1f %7.1f%% %7.1f", r->label.c_str(), r->threads, r->records, r->loom_gflops,
                  100 * r->loom_gflops / r->peak_gflops, r->default_gflops);
      for (const auto& [name, g] : r->peers) std::printf(" %9.1f (%3.0f%%)", g, 100 * g / r->peak_gflops);
      auto& rs = ratios[r->threads];
      rs.resize(r->peers.size());
      for (size_t i = 0; i < r->peers.size(); ++i) {
        double q = r->loom_gflops / r->peers[i].second;
        rs[i].push_back(q);
        std::printf(" %16.2f", q);
      }
      std::printf(" %9.1e\n", r->max_rel_err);
    }
    if (section == std::string("conv") || section == std::string("transformer")) {
      for (const auto& [nt, rs] : ratios) {
        std::printf("%-32s %3d %6s %9s %8s %7s", "geometric mean", nt, "", "", "", "");
        for (size_t i = 0; i < rs.size(); ++i) std::printf(" %16s", "");
        for (const auto& q : rs) std::printf(" %16.2f", bench::geomean(q));
        std::printf("\n");
      }
    }
    std::printf(
        "(GFLOP/s; loom = best tuned record, default = the template's default config; %%peak of the measured "
        "FMA peak at that thread count)\n");
    if (section == std::string("transformer"))
      std::printf("(each call on the next of %d copies of the weight%s)\n", o.weight_copies,
                  o.weight_copies == 1 ? ": a weight that stays in cache" : ", as a network's layers find theirs");
    std::printf("\n");
  }

  if (!o.json.empty()) {
    std::ofstream js(o.json);
    LOOM_CHECK(js.good(), "tuned_cpu: cannot write '{}'", o.json);
    js << fmt::format(R"({{"benchmark": "tuned_cpu", "target": "{}", "cpu": "{}", "repeat": {}, "stat": "{}", )"
                      R"("peak_gflops": {{)",
                      host.str(), tuner::host_cpu_name(), o.repeat, o.best ? "fastest" : "median");
    bool first = true;
    for (const auto& [nt, g] : peak)
      js << fmt::format(R"({}"{}": {:.2f})", std::exchange(first, false) ? "" : ", ", nt, g);
    js << "}, \"results\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      js << fmt::format(R"({}{{"section": "{}", "workload": "{}", "threads": {}, "records": {}, "config": "{}", )"
                        R"("loom_gflops": {:.3f}, "default_gflops": {:.3f}, "max_rel_err": {:.3e}, "peers": {{)",
                        i ? ", " : "", r.section, r.label, r.threads, r.records, r.config, r.loom_gflops,
                        r.default_gflops, r.max_rel_err);
      for (size_t k = 0; k < r.peers.size(); ++k)
        js << fmt::format(R"({}"{}": {:.3f})", k ? ", " : "", r.peers[k].first, r.peers[k].second);
      js << "}}";
    }
    js << "]}\n";
  }
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  cli::openblas_native_kernels(argv);
  cli::Command c = command();
  c.run = [](const cli::Args& a) { return run(options_from(a)); };
  return cli::run_command(c, {argv + 1, argv + argc});
}
