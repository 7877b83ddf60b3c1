// Placeholder: this module is being written. Delete this file when the first real source lands.
