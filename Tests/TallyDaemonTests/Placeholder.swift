// Placeholder: delete when the first real test lands.
