// The profiler: the events a known program records (eager ops, a static
// graph and its fused groups, backward nodes, an optimizer step, captured
// regions, allocations, thread-pool chunks), their nesting and order per
// thread, the summary's counts, the Chrome trace as JSON, and recording
// from several threads at once.

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/check.hpp"
#include "tandem/io/json.hpp"

using namespace tandem;

namespace {

std::vector<profile_record> named(const profile_trace& trace, const std::string& name) {
  std::vector<profile_record> found;
  for (const auto& e : trace.events())
    if (e.name == name) found.push_back(e);
  return found;
}

std::int64_t calls_of(const profile_summary& summary, const std::string& name) {
  for (const auto& row : summary.rows())
    if (row.name == name) return row.calls;
  return 0;
}

// Per thread: events in order of start; each nested event lies inside the
// closest earlier one a level out; self time is at most the duration.
void check_nesting(const profile_trace& trace) {
  std::map<std::uint32_t, std::vector<const profile_record*>> open;  // by thread, the enclosing chain
  std::map<std::uint32_t, std::int64_t> last_start;
  for (const auto& e : trace.events()) {
    CAPTURE(e.name);
    if (last_start.count(e.thread)) CHECK(e.start >= last_start[e.thread]);
    last_start[e.thread] = e.start;
    CHECK(e.duration >= 0);
    CHECK(e.self >= 0);
    CHECK(e.self <= e.duration);
    auto& chain = open[e.thread];
    const std::int64_t end = e.instant || e.async ? e.start : e.start + e.duration;
    while (!chain.empty() && chain.back()->start + chain.back()->duration < end) chain.pop_back();
    if (e.instant || e.async) continue;
    CHECK(static_cast<std::size_t>(e.depth) == chain.size());
    chain.push_back(&e);
  }
}

}  // namespace

TEST_CASE("profile: eager ops with their shapes, element type, bytes and FLOPs") {
  const tensor<float> x = test::random_tensor<float>({7, 17}, -1, 1, 1);
  tensor<float> y, z;
  profile_trace trace = profile([&] {
    for (int i = 0; i < 5; ++i) y = x + x;
    z = matmul(x, x.transpose(0, 1));
    tensor<float> total = sum(z);
  });
  const auto adds = named(trace, "add");
  REQUIRE(adds.size() == 5);
  CHECK(adds[0].category == profile_category::op);
  CHECK(adds[0].shapes == "[7, 17], [7, 17]");
  CHECK(adds[0].detail == "float32 cpu");
  CHECK(adds[0].bytes == 3 * 7 * 17 * 4);
  const auto products = named(trace, "matmul");
  REQUIRE(products.size() == 1);
  CHECK(products[0].flops == 2 * 7 * 7 * 17);
  CHECK(products[0].shapes == "[7, 17], [17, 7]");
  CHECK(named(trace, "sum").size() == 1);

  const profile_summary summary = trace.summary();
  CHECK(calls_of(summary, "add") == 5);
  CHECK(calls_of(summary, "matmul") == 1);
  for (const auto& row : summary.rows()) CHECK(row.self <= row.total);
  // Sorted by total time, largest first.
  for (std::size_t i = 1; i < summary.rows().size(); ++i) CHECK(summary.rows()[i - 1].total >= summary.rows()[i].total);
  CHECK(trace.summary({.order = summary_order::calls, .rows = 1}).rows().at(0).calls >= 5);
  CHECK(trace.summary({.by_shapes = true}).table().find("[7, 17], [7, 17]") != std::string::npos);
  check_nesting(trace);
}

TEST_CASE("profile: a static graph's call holds its fused groups; backward nodes nest in the backward") {
  auto f = jit([](const auto& a, const auto& b) { return exp(a) * b + a; });
  tensor<double> a = test::random_tensor<double>({1000}, -1, 1, 2), b = test::random_tensor<double>({1000}, -1, 1, 3);
  a.set_requires_grad();
  f(a, b);  // traced and planned before the recording
  profile_trace trace = profile([&] {
    f(a, b);
    sum(f(a, b)).backward();
  });
  const auto calls = named(trace, "static_graph");
  REQUIRE(calls.size() == 2);
  const auto groups = named(trace, "fused add");
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].category == profile_category::group);
  CHECK(groups[0].detail.find("exp") != std::string::npos);
  CHECK(groups[0].detail.find("mul") != std::string::npos);
  CHECK(groups[0].bytes == 3 * 1000 * 8);
  CHECK(groups[0].depth == calls[0].depth + 1);
  CHECK(groups[0].start >= calls[0].start);
  CHECK(groups[0].start + groups[0].duration <= calls[0].start + calls[0].duration);

  const auto backward = named(trace, "backward");
  REQUIRE(backward.size() == 1);
  CHECK(backward[0].category == profile_category::backward);
  const auto graph_backward = named(trace, "backward steps of static_graph");
  REQUIRE(graph_backward.size() == 1);
  CHECK(graph_backward[0].depth > backward[0].depth);
  CHECK(named(trace, "fused add backward").size() == 1);
  check_nesting(trace);
}

TEST_CASE("profile: an optimizer's step, a captured region, allocations and the pool's chunks") {
  generator gen(4);
  nn::linear<float> model(64, 32, gen);
  nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
  const tensor<float> x = test::random_tensor<float>({4096, 64}, -1, 1, 5);
  auto step = capture([](const tensor<float>& t) { return tanh(t * 0.5f + 1.0f) * t; });
  step(x);  // recorded before the profile
  profile_trace trace = profile([&] {
    mean(square(model(x))).backward();
    optimizer.step();
    tensor<float> stepped = sum(step(x));  // reads the captured region's result: it runs
    tensor<float> doubled = x * 2.0f;      // in chunks, on every thread of the pool
  });
  const auto steps = named(trace, "optimizer step");
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].category == profile_category::optimizer);
  CHECK(steps[0].detail == "2 parameters");
  CHECK(steps[0].bytes == 3 * (64 * 32 + 32) * 4);  // values, and Adam's two moments

  bool captured = false;
  for (const auto& e : trace.events())
    if (e.category == profile_category::capture) {
      captured = true;
      CHECK(e.detail.find("tanh") != std::string::npos);
    }
  CHECK(captured);

  std::int64_t allocated = 0;
  for (const auto& e : named(trace, "allocate")) {
    CHECK(e.instant);
    CHECK(e.bytes > 0);
    allocated += e.bytes;
  }
  CHECK(allocated >= 4096 * 32 * 4);  // the layer's output at least

  if (detail::thread_pool::instance().size() > 1) {
    const auto chunks = named(trace, "mul chunk");
    REQUIRE_FALSE(chunks.empty());
    CHECK(chunks[0].category == profile_category::task);
  }
  check_nesting(trace);
}

TEST_CASE("profile: the Chrome trace is JSON with an event per record") {
  const tensor<float> x = test::random_tensor<float>({33}, -1, 1, 6);
  profile_trace trace = profile([&] {
    profile_scope scope("a \"quoted\" scope\n");
    tensor<float> y = exp(x) + 1.0f;
  });
  const std::string text = trace.chrome_trace();
  const auto fail = [](const std::string& what) { return io_error(what); };
  const io::detail::json_value root = io::detail::parse_json(text, fail);
  REQUIRE(root.type == io::detail::json_value::kind::object);
  const auto at = std::find(root.keys.begin(), root.keys.end(), "traceEvents");
  REQUIRE(at != root.keys.end());
  const io::detail::json_value& events = root.items[static_cast<std::size_t>(at - root.keys.begin())];
  REQUIRE(events.type == io::detail::json_value::kind::array);
  std::int64_t complete = 0, scopes = 0;
  for (const auto& e : events.items) {
    auto field = [&](const std::string& key) -> const io::detail::json_value* {
      auto k = std::find(e.keys.begin(), e.keys.end(), key);
      return k == e.keys.end() ? nullptr : &e.items[static_cast<std::size_t>(k - e.keys.begin())];
    };
    REQUIRE(field("ph"));
    if (field("ph")->text == "X") {
      ++complete;
      CHECK(field("ts"));
      CHECK(field("dur"));
      if (field("name")->text == "a \"quoted\" scope\n") ++scopes;
    }
  }
  std::int64_t ranges = 0;
  for (const auto& e : trace.events()) ranges += !e.instant && !e.async;
  CHECK(complete == ranges);
  CHECK(scopes == 1);
}

TEST_CASE("profile: one profiler at a time; a throwing function stops it") {
  profiler first;
  first.start();
  profiler second;
  CHECK_THROWS_WITH_AS(second.start(), doctest::Contains("a profiler is already recording"), error);
  CHECK_THROWS_WITH_AS(second.stop(), doctest::Contains("this profiler is not recording"), error);
  first.stop();
  CHECK_THROWS_AS(profile([] { throw value_error("inside"); }), value_error);
  profile_trace after = profile([] { tensor<float> y = ones<float>({3}) * 2.0f; });
  CHECK(named(after, "mul").size() == 1);
  CHECK(profile([] {}).events().empty());
}

TEST_CASE("profile: four threads at once, each its own events in order") {
  constexpr int threads = 4, rounds = 50;
  std::atomic<int> started{0};
  profile_trace trace = profile([&] {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        ++started;
        tensor<float> x = full<float>({17}, static_cast<float>(t));
        for (int r = 0; r < rounds; ++r) x = x + 1.0f;
      });
    for (auto& w : workers) w.join();
  });
  CHECK(started == threads);
  CHECK(calls_of(trace.summary(), "add") == threads * rounds);
  std::map<std::uint32_t, int> per_thread;
  for (const auto& e : named(trace, "add")) ++per_thread[e.thread];
  CHECK(per_thread.size() == threads);
  for (const auto& [thread, count] : per_thread) CHECK(count == rounds);
  check_nesting(trace);
}
