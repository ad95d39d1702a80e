class Parameter:
    def __init__(self):
        self.is_cuda = False
        self.memory_format = "contiguous"


class Module:
    def __init__(self):
        self._children = []
        self._params = []

    def add(self, child):
        self._children.append(child)
        return child

    def modules(self):
        yield self
        for c in self._children:
            yield from c.modules()

    def parameters(self):
        for m in self.modules():
            yield from m._params

    def to(self, *args, memory_format=None, **kwargs):
        for p in self.parameters():
            if "cuda" in [str(a) for a in args] or kwargs.get("device") == "cuda":
                p.is_cuda = True
            if memory_format is not None:
                p.memory_format = memory_format
        return self

    def cuda(self, device=None):
        return self.to("cuda")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, x):
        return x


class Conv2d(Module):
    def __init__(self):
        super().__init__()
        self._params = [Parameter()]


class Linear(Module):
    def __init__(self):
        super().__init__()
        self._params = [Parameter()]


class CrossEntropyLoss(Module):
    pass
