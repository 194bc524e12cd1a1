"""The offline proof: the program rendered under Pulumi's mock runtime, and what is checked on it.

render and program run a Pulumi program under recording mocks; check runs the CrossGuard
pack's policies on the graph; deployability/ holds the invariants a converging
Kubernetes-on-AWS program satisfies; preflight checks the prerequisites against a real
account; testing is the public helper for a user's own tests. May import the core's
vocabulary, model and contracts, and (lazily) components and policies; never serving,
commands/ or dev/.
"""
