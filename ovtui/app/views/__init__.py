"""What the screens show, as plain view models and Rich renderables (no Textual)."""
