"""Hand-made outcomes of `kvoracle tasks run`, for tests of what is computed from them."""


def outcome(instance, task, row, budget, score):
    """One outcome with every field the run's JSON has; only the pairing and the score matter."""
    return {
        "instance": instance,
        "task": task,
        "length": 256,
        "depth": 0.5,
        "shots": 0,
        "input_tokens": 256,
        "row": row,
        "budget": budget,
        "kept": 1,
        "score": score,
        "answer": "x",
        "needles_held": None,
        "mass_of_optimum": None,
    }
