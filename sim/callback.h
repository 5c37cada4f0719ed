// A move-only `void()` callable with inline storage, for event callbacks. std::function allocates
// on the heap for captures above 16 bytes (libstdc++), which dominated the event loop's cost;
// here captures up to kInlineBytes live inside the object and larger ones fall back to the heap.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace megasim::sim {

class Callback {
 public:
  static constexpr std::size_t kInlineBytes = 48;

  Callback() = default;
  Callback(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): mirrors std::function

  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Callback> &&
                                                    std::is_invocable_r_v<void, std::decay_t<F>&>>>
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly, as to std::function
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<Fn>) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
      ops_ = &kHeapOps<Fn>;
    }
  }

  Callback(Callback&& other) noexcept { take(other); }
  Callback& operator=(Callback&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->invoke(storage_); }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*move)(void* from, void* to);  // move-constructs into `to` and destroys `from`
    void (*destroy)(void*);
  };
  template <typename Fn>
  static constexpr Ops kInlineOps{[](void* p) { (*static_cast<Fn*>(p))(); },
                                  [](void* from, void* to) {
                                    ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
                                    static_cast<Fn*>(from)->~Fn();
                                  },
                                  [](void* p) { static_cast<Fn*>(p)->~Fn(); }};
  template <typename Fn>
  static constexpr Ops kHeapOps{[](void* p) { (**static_cast<Fn**>(p))(); },
                                [](void* from, void* to) { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
                                [](void* p) { delete *static_cast<Fn**>(p); }};

  void take(Callback& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->move(other.storage_, storage_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace megasim::sim
