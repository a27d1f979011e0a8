// Value-oracle interface for set functions over a ground set {0..n-1}, with memoised marginal
// gains kept in a separate Memo object (the function stays const and shareable; optimisers and
// branch and bound copy memos instead of functions).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvo {

// What a family guarantees by construction (not measured).
struct SetFnTraits {
  std::string name;
  bool monotone = false;
  bool submodular = false;
};

// Memoised state of a set A: subclasses add what makes gains cheap (a running sum, row maxima).
class Memo {
 public:
  virtual ~Memo() = default;
  virtual std::unique_ptr<Memo> clone() const = 0;
  std::vector<int> members;  // elements of A in insertion order
};

class SetFunction {
 public:
  virtual ~SetFunction() = default;
  virtual int ground_size() const = 0;
  virtual SetFnTraits traits() const = 0;

  virtual std::unique_ptr<Memo> empty_memo() const = 0;
  // f(A + j) - f(A) for the memoised A; j must not be in A.
  virtual double gain(const Memo& memo, int j) const = 0;
  // A <- A + j.
  virtual void add(Memo& memo, int j) const = 0;
  // f(A).
  virtual double value(const Memo& memo) const = 0;

  // f(S) from scratch (through a fresh memo). Elements must be distinct and in range.
  virtual double evaluate(std::span<const int> set) const;
  // f(V \ {v}) for every v of the ground set V, in order (the dynamic eviction step). The default
  // evaluates each set, O(n) evaluations; families with a closed form override it.
  virtual std::vector<double> leave_one_out() const;
};

// Checks that a set holds distinct elements of [0, n); kvo::Error otherwise.
void validate_set(std::span<const int> set, int n);

}  // namespace kvo
