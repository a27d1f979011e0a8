"""Plain Python values from numpy ones (arrays, integers, floats), for JSON."""


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value
