"""What a run is: composing and checking its config, its identity (directory, ids), and the envs it names."""
