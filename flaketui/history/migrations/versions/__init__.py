"""One module per schema revision, oldest first: ``0001`` the tables, ``0002`` the summary,
``0003`` each task's group, ``0004`` the transitions and quarantines that end, ``0005`` the
summary's trials and passes."""
