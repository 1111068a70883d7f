"""What the agent does beside its reply, above the composer: its task list as a checklist
(todo_checklist) and the subagents and background processes it started (work_panel)."""
