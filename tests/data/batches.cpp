// One rank's batches for data-parallel training, as every rank computes
// them without talking to the others.
#include <map>

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("distributed_batches: the ranks split every epoch between them, in equal batches") {
  for (int ranks : {1, 2, 3, 4}) {
    for (std::int64_t examples : {std::int64_t{0}, std::int64_t{1}, std::int64_t{10}, std::int64_t{17}}) {
      CAPTURE(ranks);
      CAPTURE(examples);
      std::map<std::int64_t, int> seen;
      std::vector<std::size_t> counts;
      for (int rank = 0; rank < ranks; ++rank) {
        generator gen(11);
        auto batches = data::distributed_batches(examples, 3, &gen, rank, ranks);
        counts.push_back(batches.size());
        for (std::size_t k = 0; k < batches.size(); ++k) {
          // Step k's batch has the same size on every rank.
          generator again(11);
          CHECK(batches[k].numel() == data::distributed_batches(examples, 3, &again, 0, ranks)[k].numel());
          for (std::int64_t v : batches[k].to_vector()) ++seen[v];
        }
      }
      for (std::size_t c : counts) CHECK(c == counts.front());
      // Every example at least once; the epoch padded to a multiple of the
      // ranks with the first examples of the order again.
      CHECK(static_cast<std::int64_t>(seen.size()) == examples);
      std::int64_t taken = 0;
      for (const auto& entry : seen) taken += entry.second;
      CHECK(taken == (examples + ranks - 1) / ranks * ranks);
    }
  }
  // One rank of one is the plain epoch.
  generator a(5), b(5);
  auto one = data::distributed_batches(10, 4, &a, 0, 1);
  auto plain = data::batches(10, 4, &b);
  REQUIRE(one.size() == plain.size());
  for (std::size_t k = 0; k < one.size(); ++k) CHECK(one[k].to_vector() == plain[k].to_vector());
  CHECK(data::distributed_batches(9, 2, nullptr, 1, 2, true).size() == 2);
  CHECK_THROWS_WITH_AS(data::distributed_batches(10, 2, nullptr, 2, 2), doctest::Contains("rank 2 of 2 ranks"),
                       value_error);
  CHECK_THROWS_AS(data::distributed_batches(10, 0, nullptr, 0, 2), value_error);
}
