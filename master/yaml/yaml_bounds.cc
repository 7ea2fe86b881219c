// One pass over a YAML document's parse events that bounds depth and alias expansion (see
// yaml_bounds.h).
#include "master/yaml/yaml_bounds.h"

#include <algorithm>
#include <exception>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace phalanx::master {
namespace {

// Thrown inside the pass only (caught by CheckYamlBounds): stops yaml-cpp's parser at once.
struct BoundCrossed {
  std::string path;
  std::string message;
};

// What an anchored node expands to.
struct Expansion {
  int64_t size = 0;
  int height = 0;
};

class BoundsChecker : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    StartNode("~");
    Leaf(anchor, 1);
  }

  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    if (value.find('\0') != std::string::npos) Fail("contains a NUL character");
    StartNode(value);
    Leaf(anchor, 1 + static_cast<int64_t>(value.size()));
  }

  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    StartNode("?");
    auto it = expansions_.find(anchor);
    if (it == expansions_.end()) {
      Fail("an alias to a node that contains it (an alias cycle) is not allowed");
    }
    Node(it->second.size, it->second.height, "aliases expand");
  }

  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(anchor, /*map=*/false);
  }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(anchor, /*map=*/true);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool map = false;
    bool expect_key = true;  // Maps: the next node is a key.
    size_t index = 0;        // Sequences: the next item's index.
    std::string key;         // Maps: the key of the value being read.
    YAML::anchor_t anchor = 0;
    int64_t start_size = 0;
    int child_height = 0;
  };

  [[noreturn]] void Fail(std::string message) const {
    throw BoundCrossed{Path(), std::move(message)};
  }

  // "a.b[2].c"; a key being read is named by its mapping.
  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (!f.map) {
        absl::StrAppend(&path, "[", f.index, "]");
      } else if (!f.expect_key) {
        absl::StrAppend(&path, path.empty() ? "" : ".", f.key);
      }
    }
    return path.empty() ? "config" : path;
  }

  // A node of `size` units and `height` levels at the current position.
  void Node(int64_t size, int height, absl::string_view what) {
    if (static_cast<int>(frames_.size()) + height > kMaxYamlDepth) {
      Fail(absl::StrCat(what, " nesting deeper than ", kMaxYamlDepth, " levels"));
    }
    size_ += size;
    if (size_ > kMaxYamlExpandedSize) {
      Fail(absl::StrCat(what, " beyond ", kMaxYamlExpandedSize,
                        " units (nodes plus scalar bytes, aliases expanded)"));
    }
    Done(height);
  }

  void Leaf(YAML::anchor_t anchor, int64_t size) {
    if (anchor != 0) expansions_[anchor] = {size, 1};
    Node(size, 1, "the document is");
  }

  // The node at the current position is complete.
  void Done(int height) {
    if (frames_.empty()) return;
    Frame& parent = frames_.back();
    parent.child_height = std::max(parent.child_height, height);
    if (parent.map) {
      parent.expect_key = !parent.expect_key;
    } else {
      ++parent.index;
    }
  }

  // A node begins; in a mapping's key position, `key` names the entry (a key that is not a
  // scalar reads as "?").
  void StartNode(const std::string& key) {
    if (!frames_.empty() && frames_.back().map && frames_.back().expect_key) {
      frames_.back().key = key;
    }
  }

  void Open(YAML::anchor_t anchor, bool map) {
    StartNode("?");
    if (static_cast<int>(frames_.size()) + 1 > kMaxYamlDepth) {
      Fail(absl::StrCat("nesting deeper than ", kMaxYamlDepth, " levels"));
    }
    frames_.push_back({.map = map, .anchor = anchor, .start_size = size_});
    ++size_;
  }

  void Close() {
    const Frame f = std::move(frames_.back());
    frames_.pop_back();
    const int height = 1 + f.child_height;
    if (f.anchor != 0) expansions_[f.anchor] = {size_ - f.start_size, height};
    Done(height);
  }

  std::vector<Frame> frames_;
  absl::flat_hash_map<YAML::anchor_t, Expansion> expansions_;
  int64_t size_ = 0;
};

}  // namespace

absl::Status CheckYamlBounds(absl::string_view text) {
  std::istringstream in{std::string(text)};
  BoundsChecker checker;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(checker);
  } catch (const BoundCrossed& e) {
    return absl::InvalidArgumentError(absl::StrCat(e.path, ": ", e.message));
  } catch (const std::exception&) {
    // A syntax error: the loader reports it with its line and column.
  }
  return absl::OkStatus();
}

}  // namespace phalanx::master
