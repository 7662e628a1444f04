# Unit tests of the repo_dir lookup: both layouts, and never inside an installed collection.
from __future__ import annotations

import os
import tempfile
import unittest

from ansible_collections.gitops.k3s_flux.plugins.lookup.repo_dir import ansible_dir, find_repo, starts_of


def make(root, *paths):
    for p in paths:
        full = os.path.join(root, p)
        if p.endswith("/"):
            os.makedirs(full, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            open(full, "w").close()


class RepoDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.realpath(self.tmp.name)
        self.collection = os.path.join(self.root, "collections", "ansible_collections", "gitops", "k3s_flux")
        make(self.collection, "playbooks/k8s.yml", "flux/cluster.yaml", ".git/")

    def tearDown(self):
        self.tmp.cleanup()

    def find(self, inventory, playbook_dir, cwd="/"):
        return find_repo(*starts_of(inventory, playbook_dir, cwd))

    def test_flat_layout(self):
        repo = os.path.join(self.root, "flat")
        make(repo, ".git/", "playbooks/k8s.yml", "flux/cluster.yaml", "inventory.ini")
        self.assertEqual(self.find([os.path.join(repo, "inventory.ini")], os.path.join(repo, "playbooks")), repo)
        self.assertEqual(ansible_dir(repo), repo)

    def test_seed_000_layout(self):
        repo = os.path.join(self.root, "seed")
        make(repo, ".git/", "ansible/playbooks/k8s.yml", "ansible/inventory/hosts.ini", "flux/cluster.yaml")
        inv = os.path.join(repo, "ansible", "inventory", "hosts.ini")
        self.assertEqual(self.find([inv], os.path.join(repo, "ansible", "playbooks")), repo)
        self.assertEqual(ansible_dir(repo), os.path.join(repo, "ansible"))

    def test_installed_collection_play_uses_the_inventory(self):
        repo = os.path.join(self.root, "seed")
        make(repo, ".git/", "ansible/inventory.ini", "flux/cluster.yaml")
        found = self.find([os.path.join(repo, "ansible", "inventory.ini")], os.path.join(self.collection, "playbooks"))
        self.assertEqual(found, repo, "never the collection")

    def test_inventory_directory_source(self):
        repo = os.path.join(self.root, "seed")
        make(repo, ".git/", "ansible/inventory/hosts.ini")
        self.assertEqual(self.find([os.path.join(repo, "ansible", "inventory")], None), repo)

    def test_no_git_but_flux_cluster_yaml(self):
        repo = os.path.join(self.root, "nogit")
        make(repo, "ansible/inventory.ini", "flux/cluster.yaml")
        self.assertEqual(self.find([os.path.join(repo, "ansible", "inventory.ini")], None), repo)

    def test_nothing_found_is_the_parent_of_the_first_start(self):
        repo = os.path.join(self.root, "bare")
        make(repo, "playbooks/k8s.yml")
        self.assertEqual(self.find(["host1,host2,"], os.path.join(repo, "playbooks"), self.collection), repo)

    def test_nothing_found_from_the_collection_play_is_the_inventory_directory(self):
        inv = os.path.join(self.root, "bare", "inventory.ini")
        make(self.root, "bare/inventory.ini")
        self.assertEqual(self.find([inv], os.path.join(self.collection, "playbooks"), self.collection), os.path.dirname(inv))

    def test_only_a_collection(self):
        self.assertIsNone(self.find([], os.path.join(self.collection, "playbooks"), self.collection))


if __name__ == "__main__":
    unittest.main()
