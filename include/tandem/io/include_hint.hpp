#pragma once
// File I/O lives in <tandem/io.hpp>, which <tandem/tandem.hpp> leaves out
// (a translation unit that only computes parses none of it). Without it, a
// call to one of the file functions a user meets first would stop at
// "'save' is not a member of 'tandem::nn'"; these stand-ins turn that into
// a sentence naming the header.
//
// A stand-in never takes a call the real function can take: its parameters
// accept anything only through a user-defined conversion, which ranks below
// the conversions the real parameters need, and where both need one (a
// string literal for a path) the real function wins as the one that is not
// a template. So it is chosen only where the header is missing, or where
// the arguments fit no real overload, and its message covers both.

namespace tandem::detail {

struct any_argument {
  any_argument() = default;
  template <class T>
  any_argument(const T&) {}
};

}  // namespace tandem::detail

namespace tandem::nn {

template <class Missing = void>
auto save(tandem::detail::any_argument, tandem::detail::any_argument, tandem::detail::any_argument = {}) {
  static_assert(sizeof(Missing*) == 0,
                "tandem::nn::save is declared in <tandem/io.hpp>: include it, and call save(path, model) or "
                "save(path, model, &optimizer)");
}

template <class Missing = void>
auto load(tandem::detail::any_argument, tandem::detail::any_argument, tandem::detail::any_argument = {}) {
  static_assert(sizeof(Missing*) == 0,
                "tandem::nn::load is declared in <tandem/io.hpp>: include it, and call load(path, model) or "
                "load(path, model, &optimizer)");
}

}  // namespace tandem::nn

namespace tandem::data {

template <class Missing = void>
auto read_idx(tandem::detail::any_argument) {
  static_assert(sizeof(Missing*) == 0, "tandem::data::read_idx is declared in <tandem/io.hpp>: include it, and "
                                       "pass the file's path as a std::string");
}

template <class Missing = void>
auto read_idx_images(tandem::detail::any_argument) {
  static_assert(sizeof(Missing*) == 0, "tandem::data::read_idx_images is declared in <tandem/io.hpp>: include it, "
                                       "and pass the file's path as a std::string");
}

template <class Missing = void>
auto read_idx_labels(tandem::detail::any_argument) {
  static_assert(sizeof(Missing*) == 0, "tandem::data::read_idx_labels is declared in <tandem/io.hpp>: include it, "
                                       "and pass the file's path as a std::string");
}

}  // namespace tandem::data
