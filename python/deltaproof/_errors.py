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


class SelfCheckError(RuntimeError):
    """The oracle refused a fixture it generated: a self-check failed (the sentence names it,
    its figure and its bar), and nothing was written; generate_fixture(force=True) writes it
    marked 'unchecked', as `deltaproof gen --force` does. `.self_checks`: every check's figures."""

    def __init__(self, message, self_checks):
        super().__init__(message)
        self.self_checks = self_checks


InputError.__module__ = "deltaproof"
CandidateError.__module__ = "deltaproof"
SelfCheckError.__module__ = "deltaproof"
