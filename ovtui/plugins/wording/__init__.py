"""The wording learners write and agents read: an experience's sections (Situation / Approach /
Reflect), the lessons of its lines (ALWAYS / NEVER, IF … THEN, steps that worked), the facts a
lesson's condition names, and the word-level text helpers they share. The offline learner writes
in it, the sample agent acts on it, and an adherence check reads it back."""
