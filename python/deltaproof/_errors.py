"""The package's exceptions, in pure Python so that the parts that need no
compiled core (deltaproof.candidate, deltaproof.reference) raise the same
classes as the parts that do: the compiled core (python/src/core.cpp) raises
this InputError for every refusal of the C++ side."""


class InputError(ValueError):
    """Bad input: a missing, unknown or misshapen tensor, an unknown option. The
    sentence names the tensor (or option) and what was expected."""


class CandidateError(RuntimeError):
    """The candidate callable raised while it ran (its forward, or its backward
    through torch.autograd). The sentence names the call; the callable's own
    exception is the __cause__ (and `.error`); `.stage` is 'forward' or 'backward'."""

    def __init__(self, message, stage, error):
        super().__init__(message)
        self.stage = stage
        self.error = error


InputError.__module__ = "deltaproof"
CandidateError.__module__ = "deltaproof"
