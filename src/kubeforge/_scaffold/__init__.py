"""Internal: what `kubeforge init`, `create api` and `create webhook` write: the templates
(package data under templates/), the names they are filled with (names.py), the PROJECT file
(projectfile.py) and the edits made at marker comments (render.py). The commands are in
kubeforge._cli.init and kubeforge._cli.create. For re-scaffolding (`kubeforge alpha
generate` and `update`): the template sets of releases (templatesets.py), which files are the
project's own (ownership.py), the three-way merge (merge.py) and the git it uses (git.py)."""
