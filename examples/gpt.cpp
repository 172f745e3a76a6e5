// A character-level GPT trained on the King James Bible, then sampled.
// `./tandem.sh demo --model gpt` runs it. The model (4 pre-norm blocks, 4
// heads, width 128, context 128) and its loss are written once; one
// training step (forward, backward, gradient clipping, AdamW with warmup
// and a cosine schedule) runs eagerly, as one static graph (jit), or as the
// eager step under capture(). First the three modes train the same steps
// from one seed, to show they follow one loss curve; then the chosen mode
// (graph by default) trains for the time given, printing the training and
// validation loss, and the model writes some text.
//
//   ./tandem.sh demo --model gpt                  # 10 minutes of graph-mode training
//   ./tandem.sh demo --model gpt --minutes 2      # shorter
//   ./tandem.sh demo --model gpt --mode eager     # train eagerly instead
//   ./tandem.sh demo --model gpt --quick          # what ctest runs: seconds
//   ./tandem.sh demo --model gpt --precision bf16 # products of bfloat16-rounded operands
//                                                 # summed in float (autocast), or fp16
//   gpt --time-steps 30                           # the median time of a training step, then exit
//                                                 # (bench/gpt_compare.py runs it beside PyTorch)
#include <tandem/tandem.hpp>

#include "gpt_corpus.hpp"
#include "run_mode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

using namespace tandem;

namespace {

using model_type = nn::gpt<float, 4>;

struct settings {
  std::int64_t context = 128, batch = 16;
  double minutes = 10;
  std::int64_t agreement_steps = 20, interval = 200, validation_batches = 10, sample_length = 400;
  run_mode mode = run_mode::graph;
  dtype precision = dtype::float32;
  std::string data = "build/data/kjv.txt";
  bool quick = false;
  std::int64_t time_steps = 0;
};

// A model, its optimizer, schedule and training step in one mode.
struct trainer {
  model_type model;
  nn::adamw optimizer;
  nn::warmup_cosine_schedule schedule;
  run_mode mode;
  generator batches;

  trainer(const kjv::corpus& text, const settings& s, run_mode m, std::int64_t total_steps, generator& init)
      : model({.vocabulary = text.vocabulary(), .context = s.context, .width = 128, .heads = 4}, init),
        optimizer(model.named_parameters(), {.lr = 1e-3, .weight_decay = 0.1}),
        schedule(optimizer, 100, total_steps, 1e-4),
        mode(m),
        batches(1) {}

  // One step on the next training batch; its loss.
  template <class Step, class Captured>
  double step(const kjv::corpus& text, const settings& s, Step& eager_or_graph, Captured& captured) {
    const kjv::batch_pair b = kjv::windows(text.train, s.batch, s.context, batches);
    const tensor<float> loss = mode == run_mode::capture ? captured(b.inputs, b.targets) : eager_or_graph(b.inputs, b.targets);
    schedule.step();
    return loss.item();
  }
};

struct loss_of {
  const model_type* model;
  template <class X, class Y>
  auto operator()(const X& inputs, const Y& targets) const {
    return nn::cross_entropy((*model)(inputs).reshape({-1, model->config().vocabulary}), targets.reshape({-1}));
  }
};

double validation_loss(const model_type& model, const kjv::corpus& text, const settings& s) {
  no_grad inference;
  generator gen(2);
  double total = 0;
  for (std::int64_t k = 0; k < s.validation_batches; ++k) {
    const kjv::batch_pair b = kjv::windows(text.validation, s.batch, s.context, gen);
    total += loss_of{&model}(b.inputs, b.targets).item();
  }
  return total / static_cast<double>(s.validation_batches);
}

// Trains in mode m: `steps` steps, or for `seconds` when steps is 0. Prints
// progress when `verbose`; returns each step's loss.
std::vector<double> train(trainer& t, const kjv::corpus& text, const settings& s, std::int64_t steps, double seconds,
                          bool verbose, std::vector<double>* step_ms = nullptr) {
  set_mode(t.mode == run_mode::graph ? mode::graph : mode::eager);
  nn::train_step step(loss_of{&t.model}, t.optimizer, nn::clip_grad_norm(1.0));
  auto graph_step = jit(step);
  auto captured = capture([&step](const tensor<std::int64_t>& x, const tensor<std::int64_t>& y) { return step(x, y); });
  auto& eager_or_graph = t.mode == run_mode::graph ? graph_step : step;
  std::vector<double> losses;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  while (steps > 0 ? static_cast<std::int64_t>(losses.size()) < steps : elapsed() < seconds) {
    const auto begun = std::chrono::steady_clock::now();
    losses.push_back(t.step(text, s, eager_or_graph, captured));
    if (step_ms)
      step_ms->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begun).count());
    const auto done = static_cast<std::int64_t>(losses.size());
    if (verbose && done % s.interval == 0) {
      t.model.eval();
      const double val = validation_loss(t.model, text, s);
      t.model.train();
      const double now = elapsed();
      std::cout << "  step " << std::setw(5) << done << "  " << std::setw(4) << std::fixed << std::setprecision(0) << now
                << " s  train " << std::setprecision(3) << losses.back() << "  val " << val << "  "
                << std::setprecision(0) << static_cast<double>(done * s.batch * s.context) / now << " tokens/s"
                << std::endl;
    }
  }
  set_mode(mode::eager);
  return losses;
}

// The median and fastest of `time_steps` training steps in the chosen mode
// after five steps of warm-up (tracing, the plans' first runs): a step's
// time without the intervals' validation, for comparing with PyTorch.
void time_steps(const kjv::corpus& text, const settings& s) {
  generator init(7);
  trainer t(text, s, s.mode, 1000, init);
  std::vector<double> ms;
  train(t, text, s, 5 + s.time_steps, 0, false, &ms);
  ms.erase(ms.begin(), ms.begin() + 5);
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::cout << mode_name(s.mode) << " mode: " << std::fixed << std::setprecision(1) << median << " ms per step (median of "
            << ms.size() << ", fastest " << ms.front() << "), " << std::setprecision(0)
            << static_cast<double>(s.batch * s.context) / median * 1000 << " tokens/s\n";
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") s.quick = true;
    else if (arg == "--minutes" && i + 1 < argc) s.minutes = std::atof(argv[++i]);
    else if (arg == "--data" && i + 1 < argc) s.data = argv[++i];
    else if (arg == "--mode" && i + 1 < argc && parse_mode(argv[i + 1])) s.mode = *parse_mode(argv[++i]);
    else if (arg == "--model" && i + 1 < argc && std::string(argv[i + 1]) == "gpt") ++i;
    else if (arg == "--time-steps" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) s.time_steps = std::atoi(argv[++i]);
    else if (arg == "--precision" && i + 1 < argc && parse_precision(argv[i + 1])) s.precision = *parse_precision(argv[++i]);
    else {
      std::cerr << "usage: gpt [--quick] [--minutes M] [--mode eager|graph|capture] [--precision fp32|bf16|fp16] "
                   "[--data FILE] [--time-steps N]\n";
      return 2;
    }
  }
  if (!(s.minutes > 0)) {
    std::cerr << "gpt: --minutes needs a positive number\n";
    return 2;
  }
  if (s.quick) {
    s.context = 32, s.batch = 4, s.minutes = 0, s.agreement_steps = 5, s.interval = 10, s.validation_batches = 2;
    s.sample_length = 60;
  }

  kjv::corpus text;
  try {
    text = kjv::load(s.data);
  } catch (const std::exception& e) {
    std::cerr << "gpt: " << e.what() << "\n";
    return 1;
  }
  std::cout << "tandem gpt: the King James Bible, " << text.train.size() << " training and " << text.validation.size()
            << " validation characters, vocabulary " << text.vocabulary() << ", " << num_threads() << " threads\n"
            << "4 pre-norm blocks, 4 heads, width 128, context " << s.context << ", batch " << s.batch
            << "; AdamW 1e-3, warmup 100 steps and a cosine to 1e-4, gradients clipped at 1.0\n";
  if (s.precision != dtype::float32)
    std::cout << "matrix products of " << dtype_name(s.precision)
              << "-rounded operands summed in float (autocast); attention and everything else in float\n";
  const autocast precision(s.precision);

  if (s.time_steps > 0) {
    time_steps(text, s);
    return 0;
  }

  // The three modes from one seed: the same steps, the same losses.
  std::cout << "\nthe first " << s.agreement_steps << " steps in each mode:\n";
  std::vector<std::vector<double>> curves;
  for (run_mode m : {run_mode::eager, run_mode::graph, run_mode::capture}) {
    generator init(7);
    trainer t(text, s, m, 1000, init);
    const auto start = std::chrono::steady_clock::now();
    curves.push_back(train(t, text, s, s.agreement_steps, 0, false));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "  " << std::setw(7) << std::left << mode_name(m) << std::right << " loss " << std::fixed
              << std::setprecision(4) << curves.back().front() << " -> " << curves.back().back() << "  "
              << std::setprecision(0) << static_cast<double>(s.agreement_steps * s.batch * s.context) / seconds
              << " tokens/s (the first steps include tracing)\n";
  }
  double differs = 0;
  for (std::size_t m = 1; m < curves.size(); ++m)
    for (std::size_t k = 0; k < curves[0].size(); ++k)
      differs = std::max(differs, std::abs(curves[m][k] - curves[0][k]) / std::abs(curves[0][k]));
  std::cout << "  loss curves agree within " << std::scientific << std::setprecision(1) << differs << " (relative)\n";

  // The main run: the chosen mode for the time given, the cosine sized by
  // the speed of its first steps.
  generator init(7);
  const double seconds = s.minutes * 60;
  std::int64_t total = s.quick ? 20 : 0;
  if (!s.quick) {
    trainer probe(text, s, s.mode, 1000, init);
    const auto start = std::chrono::steady_clock::now();
    train(probe, text, s, 20, 0, false);
    const double per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 20;
    total = static_cast<std::int64_t>(seconds / per_step);
    init = generator(7);
  }
  std::cout << "\n" << mode_name(s.mode) << " mode, ";
  if (s.quick) std::cout << "20 steps:" << std::endl;
  else std::cout << std::defaultfloat << std::setprecision(3) << s.minutes << " minutes (about " << total << " steps):" << std::endl;
  trainer main_run(text, s, s.mode, total, init);
  const auto losses = train(main_run, text, s, s.quick ? total : 0, seconds, true);
  main_run.model.eval();
  const double final_loss = validation_loss(main_run.model, text, s);
  std::cout << "final validation loss " << std::fixed << std::setprecision(3) << final_loss << " nats per character after "
            << losses.size() << " steps\n";

  const std::string prompt = "And God said";
  const auto sampling = std::chrono::steady_clock::now();
  const tensor<std::int64_t> tokens = nn::generate(main_run.model, from_vector(text.encode(prompt)), s.sample_length,
                                                   {.temperature = 0.8, .top_k = 20, .seed = 1});
  const double sampled = std::chrono::duration<double>(std::chrono::steady_clock::now() - sampling).count();
  std::cout << "\nsampled (temperature 0.8, top 20; " << std::fixed << std::setprecision(0)
            << static_cast<double>(s.sample_length) / sampled << " tokens/s with the key-value cache):\n"
            << text.decode(tokens.to_vector()) << "\n";
  // The modes differ by rounding only (fused and unfused sums), which a few
  // steps leave far below this.
  return differs < 1e-3 ? 0 : 1;
}
