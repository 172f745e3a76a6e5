// Turns the C++ blocks of one Markdown page into a doctest file, so that the
// test suite compiles every snippet of the docs and runs those that can run
// here (docs/contributing.md says how a page marks them).
//
//   extract_snippets PAGE.md NAME OUT.cpp
//
// NAME is how the page is named in messages and #line directives (the path
// from the repository's root): a snippet that does not compile is reported
// at its line of the page.

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

struct snippet {
  std::size_t line = 0;        // of the block's first line, 1-based
  std::size_t setup_line = 0, then_line = 0;  // of the directive's setup and `then:` lines
  std::vector<std::string> setup, code, then;
  bool declarations = false, program = false, compile_only = false, output = false, skip = false;
  std::string expected_output;
  std::size_t expected_line = 0;  // of the ```text block's first line
};

[[noreturn]] void fail(const std::string& page, std::size_t line, const std::string& what) {
  std::cerr << page << ':' << line << ": " << what << '\n';
  std::exit(1);
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// A C++ string literal holding `text` (raw, with a delimiter no docs output
// contains).
std::string literal(const std::string& text) { return "R\"tandem_docs(" + text + ")tandem_docs\""; }

// Reads the flags of `<!-- snippet: flag flag ...` (the rest of the line,
// up to `-->` if the comment ends there).
void read_flags(const std::string& page, std::size_t line, std::string flags, snippet& s) {
  if (auto end = flags.find("-->"); end != std::string::npos) flags.erase(end);
  std::istringstream words(flags);
  for (std::string word; words >> word;) {
    if (word == "declarations") s.declarations = true;
    else if (word == "program") s.declarations = s.program = true;
    else if (word == "compile") s.compile_only = true;
    else if (word == "output") s.output = true;
    else if (word.rfind("skip", 0) == 0) {
      s.skip = true;
      std::string reason;
      std::getline(words, reason);
      if (trimmed(word.substr(4) + reason).empty()) fail(page, line, "a skipped snippet says why, after `skip`");
      return;
    } else
      fail(page, line, "unknown snippet flag '" + word + "' (declarations, program, compile, output, skip)");
  }
}

std::vector<snippet> read_page(const std::string& path, const std::string& page) {
  std::ifstream in(path);
  if (!in) fail(page, 0, "cannot be read");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  std::vector<snippet> snippets;
  snippet pending;
  bool has_directive = false;
  std::size_t directive_end = 0;  // the line after the directive's `-->`
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (starts_with(line, "<!-- snippet")) {
      pending = snippet{};
      has_directive = true;
      const auto colon = line.find(':');
      if (colon != std::string::npos) read_flags(page, i + 1, line.substr(colon + 1), pending);
      if (line.find("-->") == std::string::npos) {
        pending.setup_line = i + 2;
        for (++i; i < lines.size() && trimmed(lines[i]) != "-->"; ++i) {
          if (trimmed(lines[i]) == "then:" && pending.then_line == 0) pending.then_line = i + 2;
          else (pending.then_line ? pending.then : pending.setup).push_back(lines[i]);
        }
        if (i == lines.size()) fail(page, pending.setup_line - 1, "snippet directive without its closing -->");
      }
      directive_end = i + 1;
      continue;
    }
    if (starts_with(line, "```")) {
      const std::string language = trimmed(line.substr(3));
      std::vector<std::string> body;
      const std::size_t first = i + 1;
      for (++i; i < lines.size() && !starts_with(lines[i], "```"); ++i) body.push_back(lines[i]);
      if (i == lines.size()) fail(page, first - 1, "code block without its closing fence");
      if (language == "cpp" || language == "c++") {
        snippet s = has_directive && directive_end == first - 1 ? pending : snippet{};
        if (has_directive && directive_end != first - 1)
          fail(page, directive_end - 1, "a snippet directive must come right before its ```cpp block");
        has_directive = false;
        s.line = first + 1;
        s.code = std::move(body);
        snippets.push_back(std::move(s));
      } else if (language == "text" && !snippets.empty() && snippets.back().output &&
                 snippets.back().expected_output.empty()) {
        for (const auto& b : body) snippets.back().expected_output += b + '\n';
        snippets.back().expected_line = first + 1;
      }
      continue;
    }
    if (has_directive && i + 1 > directive_end && !trimmed(line).empty())
      fail(page, directive_end - 1, "a snippet directive must come right before its ```cpp block");
  }
  for (const auto& s : snippets)
    if (s.output && s.expected_output.empty())
      fail(page, s.line, "an `output` snippet needs a ```text block after it");
  return snippets;
}

// Lines of `code` with its #include lines taken out (into `includes`) and
// left blank, so that the line numbers still match the page.
std::vector<std::string> without_includes(const std::vector<std::string>& code, std::set<std::string>& includes) {
  std::vector<std::string> kept;
  for (const auto& line : code) {
    if (starts_with(trimmed(line), "#include")) {
      includes.insert(trimmed(line.substr(0, line.find("//"))));
      kept.emplace_back();
    } else {
      kept.push_back(line);
    }
  }
  return kept;
}

// A program's main lives in the page's namespace, where it is an ordinary
// function: only the global main returns 0 when it ends without a return,
// so `int main(` becomes `auto main(` (void unless it returns a value).
std::vector<std::string> without_return_type_of_main(std::vector<std::string> code) {
  for (auto& line : code)
    if (starts_with(line, "int main(")) line.replace(0, 3, "auto");
  return code;
}

// Writes the generated file, keeping count of its lines: after a block of
// the page, a #line directive hands the lines back to the generated file.
class generated_file {
 public:
  generated_file(std::string page, std::string path) : page_(std::move(page)), path_(std::move(path)) {}
  generated_file& operator<<(const std::string& text) {
    for (char c : text) line_ += c == '\n';
    text_ += text;
    return *this;
  }
  void page_lines(std::size_t line, const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    *this << "#line " + std::to_string(line) + " \"" + page_ + "\"\n";
    for (const auto& l : lines) *this << l + '\n';
    *this << "#line " + std::to_string(line_ + 2) + " \"" + path_ + "\"\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string page_, path_, text_;
  std::size_t line_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: extract_snippets PAGE.md NAME OUT.cpp\n";
    return 2;
  }
  const std::string page = argv[2];
  const std::vector<snippet> snippets = read_page(argv[1], page);

  std::string space = "snippets_";
  for (char c : page.substr(0, page.rfind(".md"))) space += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';

  std::set<std::string> includes;
  struct lines_of_snippet {
    std::vector<std::string> setup, code, then;
  };
  std::vector<lines_of_snippet> parts;
  for (const auto& s : snippets)
    parts.push_back({without_includes(s.setup, includes), without_includes(s.code, includes), without_includes(s.then, includes)});

  generated_file out(page, argv[3]);
  out << "// Generated from " + page + " by tests/docs/extract_snippets.cpp.\n#include \"docs/captured_output.hpp\"\n";
  for (const auto& include : includes) {
    // The GPU header is nvcc's; the host code around it is what g++ checks.
    const bool gpu = include.find("tandem/cuda.hpp") != std::string::npos;
    out << (gpu ? "#ifdef __CUDACC__\n" + include + "\n#endif\n" : include + "\n");
  }
  out << "namespace " + space + " {\nusing namespace tandem;\n";
  for (std::size_t i = 0; i < snippets.size(); ++i) {
    const snippet& s = snippets[i];
    const auto& [setup, code, then] = parts[i];
    const std::string name = page + ", the snippet at line " + std::to_string(s.line);
    // doctest reports to std::cout: the capture ends before the check.
    const std::string start = "TEST_CASE(" + literal(name) + ") {\n  std::string printed;\n  {\n    tandem::test::docs::captured_output out;\n";
    // A wrong output is reported at the page's ```text block.
    const auto finish = [&] {
      out << "    printed = out.text();\n  }\n";
      if (s.output) out.page_lines(s.expected_line, {"  CHECK(printed == " + literal(s.expected_output) + ");"});
      out << "}\n";
    };
    if (s.skip) {
      out << "// The snippet at line " + std::to_string(s.line) + " is skipped (its directive says why).\n";
    } else if (s.declarations) {
      out.page_lines(s.setup_line, setup);
      out.page_lines(s.line, s.program ? without_return_type_of_main(code) : code);
      out.page_lines(s.then_line, then);
      if (s.program && !s.compile_only) {
        out << start + "    main();\n";
        finish();
      }
    } else if (s.compile_only) {
      // Statements that cannot run here (files, GPUs, MPI ranks): a
      // function nobody calls.
      out << "[[maybe_unused]] void compile_only_" + std::to_string(s.line) + "() {\n";
      out.page_lines(s.setup_line, setup);
      out.page_lines(s.line, code);
      out.page_lines(s.then_line, then);
      out << "}\n";
    } else {
      out << start + "    {\n";
      out.page_lines(s.setup_line, setup);
      out.page_lines(s.line, code);
      out.page_lines(s.then_line, then);
      out << "    }\n";
      finish();
    }
  }
  out << "}  // namespace " + space + "\n";
  std::ofstream file(argv[3]);
  file << out.text();
  if (!file) fail(page, 0, std::string("cannot write ") + argv[3]);
}
