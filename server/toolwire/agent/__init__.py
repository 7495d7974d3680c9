"""The agent layer: sessions, the turn loop, scheduling, approvals, conversation integrity.

It talks to the outside through two small interfaces (:class:`~toolwire.agent.events.Sink`
for updates, :class:`~toolwire.agent.events.Approver` for permission requests), so the
LSP layer and tests can both drive it.
"""
