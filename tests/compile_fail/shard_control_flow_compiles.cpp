#include <tandem/dist.hpp>
#include <tandem/dist/shard.hpp>
#include <tandem/tandem.hpp>

// shard runs graphs without control flow.
int main() {
  tandem::dist::environment mpi;
  auto f = [](const auto& x) { return tandem::where(x > 0.0f, x * 2.0f, x - 1.0f); };
  auto sharded = tandem::dist::shard(f, {{tandem::dist::world_size()}});
  return static_cast<int>(sharded(tandem::ones<float>({4})).numel());
}
