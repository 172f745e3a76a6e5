#include <tandem/dist.hpp>
#include <tandem/dist/shard.hpp>
#include <tandem/tandem.hpp>

// shard runs graphs without control flow.
int main() {
  tandem::dist::environment mpi;
  auto f = [](const auto& x) {
    return tandem::cond(
        tandem::sum(x) > 0.0f, [](const auto& a) { return a * 2.0f; }, [](const auto& a) { return a - 1.0f; }, x);
  };
  auto sharded = tandem::dist::shard(f, {{tandem::dist::world_size()}});
  return static_cast<int>(sharded(tandem::ones<float>({4})).numel());
}
