"""Interactive problems: one scenario with its fault in place, worked on by hand, then scored (`itbench problem`)."""
